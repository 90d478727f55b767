// The schemas of the schedule routes (routes/schedules.ts).
import { Type } from 'typebox';
import { DEFAULTS } from '../../queue/defaults.ts';
import { DateTime, Name, Nullable, Ref } from '../schemas.ts';
import { enqueueBody } from './enqueue.schema.ts';

/** A schedule as the API shows it: a component (routes/schedules.ts registers it). */
export const Schedule = Type.Object(
  {
    name: Type.String(),
    cron: Type.String(),
    timezone: Type.String(),
    job: Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true }),
    paused: Type.Boolean(),
    nextRunAt: Nullable(DateTime()),
    lastRunAt: Nullable(DateTime()),
    lastJobId: Nullable(Type.String()),
  },
  { $id: 'Schedule', title: 'Schedule' },
);

export const scheduleParams = Type.Object({ name: Name('the schedule') });

/** PUT /api/schedules/:name. The cron expression and the zone are checked by croner (400s). */
export const scheduleBody = Type.Object(
  {
    cron: Type.String({ minLength: 1, maxLength: 200, description: '5 fields (minute hour day month weekday), or 6 with seconds first' }),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: `IANA time zone (default ${DEFAULTS.timezone})` })),
    job: Type.Omit(enqueueBody, ['idempotencyKey', 'dependsOn', 'onParentFailure'], {
      additionalProperties: false,
      description: 'the job each tick makes: an enqueue body without idempotencyKey (nor dependsOn)',
    }),
    paused: Type.Optional(Type.Boolean({ description: 'a paused schedule makes no jobs; resuming starts from the next tick' })),
  },
  { additionalProperties: false },
);

export const scheduleList = Type.Object({ schedules: Type.Array(Ref(Schedule)) });

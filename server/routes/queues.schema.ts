// The schemas of the queue routes (routes/queues.ts): counts and settings, their changes, a
// queue's history, and the worker registry.
import { Type } from 'typebox';
import { HISTORY_RANGES } from '../../queue/history.ts';
import { DEFAULTS, QUEUE_LIMITS } from '../../queue/defaults.ts';
import { DateTime, Name, Nullable, OneOf, Ref } from '../schemas.ts';

/** One queue's counts and settings: a component (routes/queues.ts registers it). */
export const QueueInfo = Type.Object(
  {
    queue: Type.String(),
    queued: Type.Integer(),
    scheduled: Type.Integer(),
    running: Type.Integer(),
    succeeded: Type.Integer(),
    failed: Type.Integer(),
    cancelled: Type.Integer(),
    blocked: Type.Integer({ description: 'waiting for their parents (workflows)' }),
    paused: Type.Boolean(),
    concurrency: Nullable(Type.Integer()),
    groupConcurrency: Nullable(Type.Integer()),
    rateLimit: Nullable(Type.Object({ count: Type.Optional(Type.Integer()), periodMs: Type.Optional(Type.Integer()) })),
    deadLetter: Nullable(Type.String(), { description: 'the dead-letter queue of this one' }),
    updatedBy: Nullable(
      Type.Object({
        role: Nullable(Type.String(), { description: "the token's role; null when auth is off" }),
        label: Type.Optional(Type.String({ description: "the token's label (HERALD_TOKENS entry role:label:token), when it has one" })),
      }),
      { description: 'who last changed the settings; null when never changed or not recorded (rows from before it was)' },
    ),
    updatedAt: Nullable(DateTime(), { description: 'when the settings last changed; null when never' }),
  },
  { $id: 'QueueInfo', title: 'QueueInfo' },
);

export const queueCounts = Type.Object({ queues: Type.Array(Ref(QueueInfo)) });

/** The `:queue` of /api/queues/:queue routes. */
export const queueParams = Type.Object({ queue: Name('the queue') });

const { concurrency, rateCount, ratePeriodMs } = QUEUE_LIMITS;

const rateLimit = Type.Object(
  {
    count: Type.Integer({ minimum: rateCount.min, maximum: rateCount.max, description: 'most jobs started per window' }),
    periodMs: Type.Integer({ minimum: ratePeriodMs.min, maximum: ratePeriodMs.max, description: 'the window, in ms' }),
  },
  { additionalProperties: false },
);

const concurrencyLimit = (description: string) =>
  Type.Optional(Nullable(Type.Integer({ minimum: concurrency.min, maximum: concurrency.max }), { description }));

/** PATCH /api/queues/:queue: any of the settings; null clears a limit. */
export const queuePatch = Type.Object(
  {
    paused: Type.Optional(Type.Boolean({ description: 'no job of the queue starts while paused; running ones finish' })),
    concurrency: concurrencyLimit('most jobs of the queue running at once, across all workers'),
    groupConcurrency: concurrencyLimit('most jobs of one group running at once in the queue'),
    rateLimit: Type.Optional(Type.Union([rateLimit, Type.Null()], { description: 'most jobs started in any window of periodMs' })),
    deadLetter: Type.Optional(
      Nullable(Name('the queue'), {
        description: 'the queue that gets a copy of each job of this one that fails for good (its attempts used up); null: none',
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const statsQuery = Type.Object(
  {
    range: Type.Optional(
      OneOf(Object.keys(HISTORY_RANGES) as (keyof typeof HISTORY_RANGES)[], {
        default: DEFAULTS.historyRange,
        description: '1h: 1-minute buckets; 24h: 15 minutes; 7d: 1 hour',
      }),
    ),
  },
  { additionalProperties: false },
);

export const queueStats = Type.Object(
  {
    buckets: Type.Array(
      Type.Object({
        at: DateTime(),
        enqueued: Type.Integer(),
        started: Type.Integer(),
        succeeded: Type.Integer(),
        failed: Type.Integer(),
        waitP50Ms: Nullable(Type.Number()),
        waitP95Ms: Nullable(Type.Number()),
        depth: Nullable(Type.Integer(), { description: 'queued jobs at the end of the bucket; null when no rollup ran then' }),
      }),
    ),
  },
  { description: "the queue's history, oldest bucket first" },
);

const strings = (description?: string) => Nullable(Type.Array(Type.String()), description ? { description } : {});

export const workers = Type.Object({
  workers: Type.Array(
    Type.Object({
      worker: Type.String({ description: 'host:pid:random, as in lockedBy' }),
      host: Nullable(Type.String()),
      pid: Nullable(Type.Integer()),
      queues: strings('null: every queue'),
      kinds: strings(),
      capabilities: strings(),
      concurrency: Nullable(Type.Integer()),
      running: Type.Integer(),
      startedAt: Nullable(DateTime()),
      lastSeenAt: Nullable(DateTime()),
      since: Nullable(DateTime()),
      jobs: Type.Array(Type.String()),
    }),
  ),
});

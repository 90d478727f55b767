// The schemas of the job routes (routes/jobs.ts): list and search, bulk actions, one job, its
// events, cancel and retry.
import { Type } from 'typebox';
import { JOB_STATUSES } from '../../queue/schema/index.ts';
import { BULK_ACTIONS, DEFAULTS } from '../../queue/defaults.ts';
import { DURABLE_WAITS } from '../../queue/search.ts';
import { DateTime, Job, JobEvent, JobId, Name, Nullable, OneOf, Ref } from '../schemas.ts';

export const idParams = Type.Object({ id: JobId() });

/** The filters of GET /api/jobs; POST /api/jobs/bulk takes the same ones as its `filter`. */
const filterFields = {
  queue: Type.Optional(Name('only this queue')),
  status: Type.Optional(OneOf([...JOB_STATUSES, 'scheduled'] as const, { description: 'a status, or scheduled: queued with runAt still ahead' })),
  kind: Type.Optional(Name('only this kind')),
  payload: Type.Optional(
    Type.String({ minLength: 1, maxLength: 10_000, description: 'JSON containment: {"user":42} matches every payload holding it' }),
  ),
  error: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: 'a case-insensitive substring of lastError.message' })),
  createdAfter: Type.Optional(DateTime('created at or after this ISO time')),
  createdBefore: Type.Optional(DateTime('created at or before this ISO time')),
  group: Type.Optional(Name('only jobs of this group')),
  tag: Type.Optional(Name('only jobs carrying this tag')),
  flow: Type.Optional(JobId('only jobs of this flow')),
  waitingFor: Type.Optional(
    OneOf(DURABLE_WAITS, { description: "queued jobs whose durable handler sleeps (ctx.sleep), waits for a signal (ctx.waitFor) or for a job it invoked (ctx.invoke): the Job's waitingFor" }),
  ),
};

export const listQuery = Type.Object(
  {
    ...filterFields,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: DEFAULTS.listLimit })),
    before: Type.Optional(JobId('page: jobs with a smaller id (the `next` of the previous page)')),
  },
  { additionalProperties: false },
);

/** A page of jobs; `searched` only when a search window cut it short (see GET /api/jobs). */
export const jobPage = Type.Object(
  {
    jobs: Type.Array(Ref(Job)),
    next: Nullable(Type.String()),
    searched: Type.Optional(Type.Integer({ description: 'present when the search window cut this page short: jobs looked at' })),
  },
  { description: 'a page of jobs' },
);

export const bulkBody = Type.Object(
  {
    action: OneOf(BULK_ACTIONS, {
      description: 'retry: failed and cancelled jobs; cancel: queued, blocked and running; delete: succeeded, failed and cancelled, with their events (each leaves one deleted event); redrive: dead-letter copies (queued or failed, the newest of their source, whose source has not run again) back to their source queue as new jobs (a flow job is retried in place); run_now: queued jobs waiting out a backoff or their runAt (not a durable sleep or wait), due at once',
    }),
    filter: Type.Object(
      {
        ...filterFields,
        payload: Type.Optional(
          Type.Unknown({ description: 'JSON containment: the JSON value itself, or the same JSON as a string (as the query takes it)' }),
        ),
      },
      { additionalProperties: false, description: 'the GET /api/jobs filters; it must name a queue, a status or a flow' },
    ),
    dryRun: Type.Optional(Type.Boolean({ description: 'change nothing: count the matches, and those the action would change now' })),
  },
  { additionalProperties: false },
);

export const bulkResult = Type.Object(
  {
    matched: Type.Integer({ description: 'jobs the filter matched, in any status' }),
    affected: Type.Integer({ description: 'jobs the action changed; on a dry run, those it would change now' }),
  },
  { description: 'what the action matched and changed (or, on a dry run, would change)' },
);

export const jobEvents = Type.Object(
  {
    events: Type.Array(Ref(JobEvent)),
    next: Nullable(Type.String({ description: 'pass as `after` for the next page; null on the last one' })),
  },
  { description: "a page of the job's events, oldest first" },
);

/** GET /api/jobs/:id/events: a page of the timeline. */
export const jobEventsQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,19}$', description: 'page: events with a larger eventId (the `next` of the previous page)' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DEFAULTS.eventsLimit, default: DEFAULTS.eventsLimit })),
  },
  { additionalProperties: false },
);

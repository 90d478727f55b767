// The event log (one row per transition) and what retention leaves of it.
import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, primaryKey, smallint, text } from 'drizzle-orm/pg-core';
import { herald, tstz, xid8 } from './base.ts';
import { jobStatus } from './jobs.ts';

export const EVENT_TYPES = [
  'enqueued',
  'claimed',
  'progress',
  'succeeded',
  'retry_scheduled',
  'failed',
  'cancel_requested',
  'cancelled',
  'lease_expired',
  'released',
  'retried',
  'expired',
  'unblocked',
  // A bulk delete removed the job (its row is gone; this event stays, so live views drop it).
  'deleted',
  // Durable handlers: a step stored, the run ended to sleep or to wait (signal, invoked child),
  // a signal sent to the job, and a claim that resumes a job after its sleep or wait.
  'step',
  'sleeping',
  'waiting',
  'signalled',
  'resumed',
  // A queued job waiting out its backoff or its runAt was made runnable now (POST /api/jobs/:id/run-now).
  'promoted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const eventType = herald.enum('event_type', EVENT_TYPES);

// Append-only: one row per transition, written by the statement-level triggers on jobs.
// No foreign key: RI checks are row-level triggers, which would undo the batching.
export const jobEvents = herald.table(
  'job_events',
  {
    id: bigint('id', { mode: 'bigint' }).notNull().generatedAlwaysAsIdentity(),
    jobId: bigint('job_id', { mode: 'bigint' }).notNull(),
    tx: xid8('tx').notNull().default(sql`pg_current_xact_id()`),
    at: tstz('at').notNull().defaultNow(),
    queue: text('queue').notNull(),
    kind: text('kind').notNull(),
    type: eventType('type').notNull(),
    status: jobStatus('status').notNull(),
    attempt: integer('attempt').notNull(),
    worker: text('worker'),
    data: jsonb('data'),
    // The job's flow (null outside workflows): the stream's ?flow= filter reads it.
    flowId: bigint('flow_id', { mode: 'bigint' }),
  },
  (t) => [
    // Two indexes, each written for every event: the key is the gap-free feed's order, (tx, id),
    // read below the transaction horizon; a job's timeline is found by job_id (a few rows, sorted
    // by id after). A separate key on id alone would be a third index that nothing reads.
    primaryKey({ name: 'job_events_pkey', columns: [t.tx, t.id] }),
    index('job_events_job').on(t.jobId),
  ],
);

// Where retention stopped removing events: the highest (tx, id) it deleted. A stream resumed from
// a cursor below it may have missed removed events, so it starts with `event: reset`.
export const retentionHorizon = herald.table(
  'retention_horizon',
  {
    id: smallint('id').primaryKey().default(1),
    tx: xid8('tx').notNull().default(sql`'0'::xid8`),
    eventId: bigint('event_id', { mode: 'bigint' }).notNull().default(sql`0`),
  },
  (t) => [check('retention_horizon_one_row', sql`${t.id} = 1`)],
);

// Jobs a bulk delete removed, until retention removes their events too (their history stays
// until then, so queue history and resuming streams still see every event).
export const deletedJobs = herald.table(
  'deleted_jobs',
  {
    jobId: bigint('job_id', { mode: 'bigint' }).primaryKey(),
    deletedAt: tstz('deleted_at').notNull().defaultNow(),
  },
  (t) => [index('deleted_jobs_at').on(t.deletedAt)],
);

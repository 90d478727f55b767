// Durable execution: what a job's earlier runs left for its next ones (steps, sleeps, waits,
// invokes) and the signals sent to it. Rows exist only for jobs whose handlers use ctx.step and
// its kin: a plain job never reads or writes these tables.
import { sql } from 'drizzle-orm';
import { bigint, boolean, check, integer, jsonb, primaryKey, text } from 'drizzle-orm/pg-core';
import { herald, tstz } from './base.ts';

/**
 * What a record is: a step's result, a sleep's wake-up time, a signal wait's deadline, an
 * invoked child's id. Each is found on replay by (type, name, occurrence).
 */
export const RECORD_TYPES = ['step', 'sleep', 'wait', 'invoke'] as const;
export type RecordType = (typeof RECORD_TYPES)[number];

// One row per finished durable call, written by the attempt that made it (fenced like an outcome).
// `occurrence` counts the calls of one name in a run, from 0: the n-th call finds the n-th row.
export const jobSteps = herald.table(
  'job_steps',
  {
    jobId: bigint('job_id', { mode: 'bigint' }).notNull(),
    type: text('type').$type<RecordType>().notNull(),
    name: text('name').notNull(),
    occurrence: integer('occurrence').notNull(),
    attempt: integer('attempt').notNull(),
    result: jsonb('result'),
    startedAt: tstz('started_at').notNull(),
    finishedAt: tstz('finished_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'job_steps_pkey', columns: [t.jobId, t.type, t.name, t.occurrence] }),
    check('job_steps_type', sql`${t.type} IN ('step', 'sleep', 'wait', 'invoke')`),
    check('job_steps_name', sql`length(${t.name}) BETWEEN 1 AND 256`),
  ],
);

// One value per job and name. A signal sent before the job waits for it is kept here until the
// wait finds it; a wait that timed out stores its own row (timed_out, no payload), so a signal
// and a timeout that race resolve one way only: whichever row the key took first.
export const jobSignals = herald.table(
  'job_signals',
  {
    jobId: bigint('job_id', { mode: 'bigint' }).notNull(),
    name: text('name').notNull(),
    payload: jsonb('payload'),
    timedOut: boolean('timed_out').notNull().default(false),
    sentAt: tstz('sent_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ name: 'job_signals_pkey', columns: [t.jobId, t.name] })],
);

// Counts kept beside the jobs: per queue, status and minute, and the per-minute queue history.
import { sql } from 'drizzle-orm';
import { bigint, index, integer, primaryKey, smallint, text } from 'drizzle-orm/pg-core';
import { herald, tstz, xid8 } from './base.ts';
import { jobStatus } from './jobs.ts';

// Jobs per queue, status and minute, kept by statement triggers on jobs (drizzle/0018): GET
// /api/queues, /metrics and the history's depth sum these rows instead of counting jobs. Each
// session adds its deltas to its own stripe (1-16), so concurrent writers seldom share a row; the
// maintenance pass folds the stripes into stripe 0. `minute` is the minute of a queued job's
// available_at, so the jobs scheduled for later are those of the minutes after the current one
// (and the rest of this one); -infinity for every other status, and for queued minutes already
// past once folded.
export const jobCounts = herald.table(
  'job_counts',
  {
    queue: text('queue').notNull(),
    status: jobStatus('status').notNull(),
    minute: tstz('minute').notNull(),
    stripe: smallint('stripe').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'job_counts_pkey', columns: [t.queue, t.status, t.minute, t.stripe] })],
);

// Queue history: one row per queue and minute, rolled up from job_events by one process at a
// time (queue/sql/history.ts). `wait_hist` is a log-scale histogram of enqueue→start waits, so
// coarser buckets (15 min, 1 h) merge minutes into exact-to-the-bin percentiles.
export const queueStats = herald.table(
  'queue_stats',
  {
    queue: text('queue').notNull(),
    at: tstz('at').notNull(),
    enqueued: integer('enqueued').notNull().default(0),
    started: integer('started').notNull().default(0),
    succeeded: integer('succeeded').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    waitHist: integer('wait_hist').array().notNull().default(sql`'{}'::int[]`),
    // Queued jobs when the minute was last rolled up; null when no rollup ran in that minute.
    depth: integer('depth'),
  },
  (t) => [primaryKey({ columns: [t.queue, t.at] }), index('queue_stats_at').on(t.at)],
);

// Where the rollup stopped in the gap-free feed: one row, moved in the same transaction as the
// rows it added, so every event is counted exactly once.
export const statsCursor = herald.table('stats_cursor', {
  id: smallint('id').primaryKey().default(1),
  tx: xid8('tx').notNull().default(sql`'0'::xid8`),
  eventId: bigint('event_id', { mode: 'bigint' }).notNull().default(sql`0`),
});

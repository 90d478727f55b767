// The consumer's half of coalesced wake-ups (drizzle/0019_wake_at_commit.sql): a transaction that
// commits alongside the one that sent a NOTIFY skips its own, and holds the target's barrier
// (shared) until it has ended. A listener woken by the notification runs this in a statement of
// its own before it reads, so that read sees the skippers' rows too. Targets: wakeTarget().
import { statement } from './statement.ts';

/** Waits (at most $2 ms) for the barriers of targets $1; false when it gave up (the safety net covers it). */
export const passWakeBarriers = statement<[targets: string[], timeoutMs: number], { passed: boolean }>('pass_wake_barriers', `
SELECT herald.pass_wake_barriers($1::text[], $2::int) AS passed`);

/**
 * Every queue with a job counted. A listener that was not listening (starting, or reconnecting)
 * missed the notifications sent meanwhile, so it passes these queues' barriers before its first
 * read: a producer that committed beside one of those senders skipped its own NOTIFY. Such a
 * sender's job is counted from its commit on, so its queue is here.
 */
export const countedQueues = statement<[], { queue: string }>('counted_queues', `SELECT DISTINCT queue FROM herald.job_counts`);

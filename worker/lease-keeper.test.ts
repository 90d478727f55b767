// Renewals when the database does not answer, in-process against real PostgreSQL. The test holds
// the job's row, so every renewal waits for it the way one on a dead socket waits for an answer:
// each is given up at its timeout and retried at once, and when none gets through the handler
// stops at its lease's local deadline, before the lease ends in the database.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { waitFor } from '../test/support/wait.ts';
import { CONTROL_CHANNEL } from '../queue/channels.ts';
import { Worker } from './worker.ts';
import type { WorkerOptions } from './options.ts';
import type { TaskContext } from './tasks.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

let queueNo = 0;

/** A worker running one job of `wait` on a queue of its own: the handler waits for its signal, or for `finish()`. */
async function runningJob(opts: Partial<WorkerOptions>) {
  const queue = `lk${++queueNo}`;
  let reason: unknown;
  let finish!: () => void;
  const task = (_p: unknown, ctx: TaskContext) =>
    new Promise((resolve) => {
      finish = () => resolve('done');
      ctx.signal.addEventListener('abort', () => {
        reason = ctx.signal.reason;
        resolve('stopped');
      });
    });
  // No reaper in this worker: only the lease and the worker's own clock decide.
  const w = new Worker({ databaseUrl: db.url, concurrency: 1, pollMs: 60_000, queues: [queue], reapEveryMs: 3_600_000, tasks: { wait: task }, ...opts });
  await w.start();
  const { job } = await db.queue.enqueue({ kind: 'wait', queue });
  await waitFor(async () => (await db.queue.get(job.id))?.status === 'running' && finish, { what: 'the job to run' });
  return { w, job, reason: () => reason, finish: () => finish() };
}

/** Holds the job's row in an open transaction; resolves with the session and its pid. */
async function holdRow(id: string): Promise<{ holder: pg.PoolClient; pid: number }> {
  const holder = await db.pool.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [id]);
  const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return { holder, pid: rows[0].pid };
}

/** Sessions waiting for `pid`'s lock: directly, or queued behind one that does (a row's later waiters wait for its first). */
const waitingBehind = async (pid: number): Promise<number> =>
  (
    await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity a
       WHERE $1 = ANY(pg_blocking_pids(a.pid))
          OR EXISTS (SELECT 1 FROM unnest(pg_blocking_pids(a.pid)) b WHERE $1 = ANY(pg_blocking_pids(b)))`,
      [pid],
    )
  ).rows[0].n;

// Catches: a renewal without a timeout (drop `{ timeoutMs: RENEW_TIMEOUT_MS }` in queue/sql/lease.ts:
// the first one waits for ever), or a failed one retried a third of a lease later instead of at once
// (`RENEW_RETRY_MS` -> `this.opts.leaseMs / 3` in worker/leases.ts).
it('a renewal that gets no answer is given up at its timeout and retried at once', async () => {
  // A lease of ten minutes: the timer would renew every 200 s.
  const { w, job, finish } = await runningJob({ leaseMs: 600_000 });
  try {
    const { holder, pid } = await holdRow(job.id);
    try {
      // A cancel notification for this worker asks for a renewal now.
      await db.pool.query(`SELECT pg_notify($1, $2)`, [CONTROL_CHANNEL, `cancel ${w.id}`]);
      // The first renewal waits behind the held row; given up, it is followed by a second one.
      await waitFor(async () => (await waitingBehind(pid)) >= 2, { what: 'a second renewal after the first timed out' });
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    finish();
    await waitFor(async () => (await db.queue.get(job.id))?.status === 'succeeded', { what: 'the job to finish' });
    expect(await db.queue.get(job.id)).toMatchObject({ status: 'succeeded', attempt: 1 });
  } finally {
    await w.stop();
  }
});

// Catches: no local deadline (drop the `setInterval(() => this.opts.overdue(...))` line in
// worker/leases.ts): the handler runs on past the lease, while the job may already be another's.
it('when no renewal gets through, the handler stops at its local deadline, while the lease still stands', async () => {
  const { w, job, reason } = await runningJob({ leaseMs: 3_000 });
  try {
    const { holder } = await holdRow(job.id);
    try {
      await waitFor(() => reason(), { what: 'the handler to be stopped' });
      expect(reason()).toMatchObject({ name: 'LeaseExpiredError' });
      // The row is still held by the test: no renewal, reaper or other worker has touched it. The
      // handler stopped while the job was still this attempt's.
      const { rows } = await holder.query(`SELECT status, attempt, locked_by FROM herald.jobs WHERE id = $1`, [job.id]);
      expect(rows[0]).toEqual({ status: 'running', attempt: 1, locked_by: w.id });
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  } finally {
    await w.stop();
  }
});

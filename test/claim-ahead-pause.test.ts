// Jobs in a worker's claim-ahead buffer were claimed before a PATCH that pauses their queue, or
// before their expireAt passed. The promise holds for them too: none starts after the PATCH has
// returned, nor after its expireAt. Two guards keep it, each tested alone here: the settings
// change hands the buffer back at once (announced by NOTIFY, or found by the next poll), and the
// check just before a buffered job starts (mayStart) refuses it if the hand-back has not come.
// A job that holds the worker's only slot until the test lets it go makes the order certain: no
// buffered job can start before the test frees the slot, which it does after the PATCH returned.
// `started` records each handler as it starts: a buffered start writes no event of its own.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { allowConnections, useTestDatabase } from './support/db.ts';
import { sessionPid, terminateSession } from './support/sessions.ts';
import { waitFor } from './support/wait.ts';
import { Worker } from '../worker/worker.ts';
import { Pace } from '../worker/pace.ts';
import type { Job } from '../queue/job.ts';

const db = useTestDatabase({}, { truncate: ['herald.jobs', 'herald.job_events'] });
afterEach(async () => {
  unblock(); // a failed test may have left the slot taken
  await worker?.stop();
  vi.restoreAllMocks();
});

/** No poll within a test's time: only a notification (or the start check) can act. */
const NEVER_MS = 600_000;

let started: string[];
let unblock: () => void;
let blocked: Promise<void>;
let worker: Worker | undefined;
beforeEach(async () => {
  await db.pool.query('DELETE FROM herald.queues'); // a DELETE, so the gate row follows
  started = [];
  worker = undefined;
  blocked = new Promise<void>((r) => (unblock = r));
  // A fixed pace of two jobs per horizon: a measured one falls to zero after an idle 200 ms, and
  // a stall that long under load (between the quick job's end and the next claim) would leave x
  // in the database.
  vi.spyOn(Pace.prototype, 'within').mockReturnValue(2);
});

/** One slot; everything claimable goes into the buffer and stays there until the test is done. */
function startWorker(opts: { listen: boolean; pollMs: number; reapEveryMs?: number }): Worker {
  worker = new Worker({
    databaseUrl: db.url,
    // Unreachable: polling only, as behind a transaction pooler.
    listenUrl: opts.listen ? undefined : 'postgres://nobody@127.0.0.1:1/none',
    concurrency: 1,
    pollMs: opts.pollMs,
    claimAheadMs: NEVER_MS,
    claimAheadTtlMs: NEVER_MS,
    scheduler: false,
    reapEveryMs: opts.reapEveryMs ?? 100,
    tasks: {
      k: async (_p, ctx) => void started.push(ctx.job.id),
      block: async (_p, ctx) => {
        started.push(ctx.job.id);
        await blocked;
      },
    },
  });
  return worker;
}

/**
 * Enqueues, in claim order: a quick job (a full first claim, so the worker knows the queue has a
 * backlog and its next claim takes two ahead), a job that holds the only slot, and `x`, which then
 * waits in the buffer.
 */
async function bufferX(w: Worker): Promise<{ block: Job; x: Job }>;
async function bufferX(w: Worker, x: { expireAt: Date }): Promise<{ block: Job; x: Job } | null>;
/** With an expireAt: null when it passed before x was claimed (a claim never takes an expired job). */
async function bufferX(w: Worker, x: { expireAt?: Date } = {}): Promise<{ block: Job; x: Job } | null> {
  const made = await db.queue.enqueueMany([
    { kind: 'k', queue: 'q', priority: 10 },
    { kind: 'block', queue: 'q', priority: 5 },
    { kind: 'k', queue: 'q', priority: 0, expireAt: x.expireAt?.toISOString() },
  ]);
  const [block, xJob] = [made[1].job, made[2].job];
  await w.start();
  const buffered = async () => started.includes(block.id) && (await db.queue.get(xJob.id))?.status === 'running';
  const expired = async () => !!x.expireAt && (await db.pool.query(`SELECT now() > $1 AS past`, [x.expireAt])).rows[0].past;
  const seen = await waitFor(async () => ((await buffered()) ? 'buffered' : (await expired()) && 'expired'), { what: 'x to wait in the buffer' });
  return seen === 'buffered' ? { block, x: xJob } : null;
}

const statusOf = async (id: string) => (await db.queue.get(id))!.status;

/** The buffered job is back in the queue, attempt refunded, while the slot is still taken. */
async function handedBackWhileBlocked(block: Job, x: Job, what: string): Promise<void> {
  await waitFor(async () => (await statusOf(x.id)) === 'queued', { what, timeoutMs: 20_000 });
  expect((await db.queue.get(x.id))!.attempt).toBe(0);
  expect(await statusOf(block.id)).toBe('running');
}

it('a pause announced by NOTIFY hands the buffer back at once; no buffered job starts', async () => {
  const { block, x } = await bufferX(startWorker({ listen: true, pollMs: NEVER_MS }));
  await db.queue.patchQueue('q', { paused: true });
  await handedBackWhileBlocked(block, x, 'the notified settings change to hand the buffered job back');
  unblock();
  await waitFor(async () => (await statusOf(block.id)) === 'succeeded', { what: 'the blocking job to finish' });
  await worker!.stop();
  expect(started).toEqual([expect.any(String), block.id]);
});

it('without notifications, the next poll finds the pause and hands the buffer back before its TTL', async () => {
  const { block, x } = await bufferX(startWorker({ listen: false, pollMs: 100 }));
  await db.queue.patchQueue('q', { paused: true });
  await handedBackWhileBlocked(block, x, 'a poll to find the pause and hand the buffered job back');
  unblock();
  await waitFor(async () => (await statusOf(block.id)) === 'succeeded', { what: 'the blocking job to finish' });
  await worker!.stop();
  expect(started).not.toContain(x.id);
});

it('a pause sent while the listener was cut off is found when it reconnects; the buffer goes back', async () => {
  // No reaper: while the listener is away its liveness lock is gone, and a reaper would soon
  // shorten this worker's leases (the test is about the settings, not about that grace).
  const w = startWorker({ listen: true, pollMs: NEVER_MS, reapEveryMs: NEVER_MS });
  const { block, x } = await bufferX(w);
  const listener = await sessionPid(db.pool, `herald:worker-listener:${process.pid}`);
  expect(listener).not.toBeNull();
  // The listener cannot come back until the pause has committed, so its NOTIFY is lost for sure.
  const session = await db.pool.connect(); // a connection for the PATCH, made before the door shuts
  session.release();
  await allowConnections(db, false);
  try {
    await terminateSession(db.pool, listener!);
    await db.queue.patchQueue('q', { paused: true });
    expect(await statusOf(x.id)).toBe('running');
  } finally {
    await allowConnections(db, true);
  }
  await handedBackWhileBlocked(block, x, 'the reconnected listener to re-read the settings and hand the buffered job back');
  unblock();
  await waitFor(async () => (await statusOf(block.id)) === 'succeeded', { what: 'the blocking job to finish' });
  await w.stop();
  expect(started).not.toContain(x.id);
});

it('when the hand-back has not come, the check before the start refuses a job of a paused queue', async () => {
  // Neither a notification nor a poll can come first: the slot frees right after the PATCH returned.
  const { block, x } = await bufferX(startWorker({ listen: false, pollMs: NEVER_MS }));
  await db.queue.patchQueue('q', { paused: true });
  expect(await statusOf(x.id)).toBe('running');
  unblock();
  await waitFor(async () => (await statusOf(block.id)) === 'succeeded', { what: 'the blocking job to finish' });
  await waitFor(async () => (await statusOf(x.id)) === 'queued', { what: 'the refused job to go back to the queue' });
  expect((await db.queue.get(x.id))!.attempt).toBe(0);
  await worker!.stop();
  expect(started).not.toContain(x.id);
});

it('a buffered job whose expireAt passed never starts; the expiry pass ends it', async () => {
  // x must be claimed before its expireAt, which a slow worker start can miss: then it all runs
  // again with a later one. Caught: mayStart not comparing expireAt (x then starts).
  let buffered: { block: Job; x: Job } | null = null;
  let at = new Date();
  for (let aheadS = 2; !buffered; aheadS *= 2) {
    if (aheadS > 32) throw new Error('the worker never claimed x before its expireAt, even 32 s ahead');
    if (worker) {
      unblock();
      await worker.stop();
      blocked = new Promise<void>((r) => (unblock = r));
      started = [];
      await db.pool.query('TRUNCATE herald.jobs, herald.job_events RESTART IDENTITY');
    }
    ({ rows: [{ at }] } = await db.pool.query(`SELECT now() + make_interval(secs => $1) AS at`, [aheadS]));
    buffered = await bufferX(startWorker({ listen: false, pollMs: 100 }), { expireAt: at });
  }
  const { block, x } = buffered;
  // Time passes while it waits in the buffer, until the database's clock is past its expireAt.
  await waitFor(async () => (await db.pool.query(`SELECT now() > $1 AS past`, [at])).rows[0].past, { what: 'expireAt to pass' });
  unblock();
  await waitFor(async () => (await statusOf(block.id)) === 'succeeded', { what: 'the blocking job to finish' });
  await waitFor(async () => (await statusOf(x.id)) === 'cancelled', { what: 'the expired job to be cancelled' });
  const { rows } = await db.pool.query(`SELECT type FROM herald.job_events WHERE job_id = $1 ORDER BY id`, [x.id]);
  expect(rows.map((r) => r.type)).toEqual(['enqueued', 'claimed', 'released', 'expired']);
  await worker!.stop();
  expect(started).not.toContain(x.id);
});

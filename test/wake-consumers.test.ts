// The listeners' half of coalesced wake-ups: a worker and the server's event stream, woken by the
// one notification of two producers, also get the jobs and events of the one that skipped its
// NOTIFY and committed after it. The poll and the tailer's safety read are a minute away, so
// only the barrier each passes after its notification can bring them. Commits are ordered with
// held locks (test/support/commit-hold.ts), never sleeps. A barrier's wait is bounded (1 s): the
// last two tests hold the skipper's COMMIT past it, and the listener must wait for it again.
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestDatabase } from './support/db.ts';
import { installCommitHold, openTransaction, type HeldCommit } from './support/commit-hold.ts';
import { lockWaitersReach, pidOf } from './support/lock-waiters.ts';
import { waitFor } from './support/wait.ts';
import { watchLog } from './support/log-watch.ts';
import { Worker } from '../worker/worker.ts';
import { EventHub } from '../server/stream/hub.ts';
import type { JobEvent } from '../queue/job.ts';

const db = useTestDatabase();
let holder: pg.Client;
let held: number; // the holder's pid

beforeAll(async () => {
  await installCommitHold(db.pool);
  holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  held = await pidOf(holder);
});
afterAll(() => holder.end());

/**
 * Two producers of one job each in `queue`: T1 commits (and notifies) first, T2 (skipped) after
 * it. Returns once T1 has committed while T2 still waits inside its COMMIT, holding the barrier.
 * T2's job is 10 minutes old: another row of herald.job_counts than T1's, whose lock T1 holds.
 */
async function notifierThenSkipper(queue: string, key: number): Promise<{ ids: string[]; t2: HeldCommit }> {
  const insert = (at: string) => `INSERT INTO herald.jobs (queue, kind, payload, available_at) VALUES ('${queue}', 'k', '{}', ${at})`;
  const t1 = await openTransaction(db.pool, [insert('now()')]);
  const t2 = await openTransaction(db.pool, [insert(`now() - interval '10 minutes'`)]);
  const held1 = await t1.commitHeld(holder, key);
  await lockWaitersReach(db.pool, { waiter: t1.pid, holder: held });
  const held2 = await t2.commitHeld(holder, key + 1);
  await lockWaitersReach(db.pool, { waiter: t1.pid, holder: held }, { waiter: t2.pid, holder: held });
  await held1.release();
  const { rows } = await db.pool.query<{ id: string }>('SELECT id::text FROM herald.jobs WHERE queue = $1 ORDER BY id', [queue]);
  return { ids: rows.map((r) => r.id), t2: held2 };
}

it('a worker woken by the notifier claims the job of the producer that skipped its NOTIFY, not at the next poll', async () => {
  const w = new Worker({ databaseUrl: db.url, concurrency: 4, pollMs: 60_000, queues: ['wq'], scheduler: false, tasks: { k: async () => null } });
  await w.start();
  try {
    const { ids, t2 } = await notifierThenSkipper('wq', 1001);
    expect(ids).toHaveLength(1); // T2's job is not visible yet
    // T2 inside its COMMIT, and the worker's barrier waiting for it
    await lockWaitersReach(db.pool, { waiter: t2.pid, holder: held }, { waiter: { app: `herald:worker:${process.pid}` }, holder: t2.pid });
    await t2.release();
    const done = async () => (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM herald.jobs WHERE queue = 'wq' AND status = 'succeeded'`)).rows[0].n;
    await waitFor(async () => (await done()) === 2, { what: 'both jobs to run on the one notification' });
  } finally {
    await w.stop();
  }
});

it("the event stream publishes the skipping producer's events on the notifier's tick, not at the safety read", async () => {
  const hub = await EventHub.start({ queue: db.queue, listenUrl: db.url, pool: db.pool, safetyMs: 60_000 });
  const seen: JobEvent[] = [];
  // A stream follows it (with none, ticks start no read).
  hub.fanout.subscribe({ filter: { queue: 'sq' }, deliver: (messages) => seen.push(...messages.map((m) => m.event)) });
  try {
    const { ids, t2 } = await notifierThenSkipper('sq', 2001);
    // T2 inside its COMMIT, and the tailer's barrier waiting for it
    await lockWaitersReach(db.pool, { waiter: t2.pid, holder: held }, { waiter: { app: 'herald' }, holder: t2.pid }); // the tailer reads through db.pool
    await t2.release();
    await waitFor(() => seen.length >= 2, { what: "both producers' events" });
    const all = (await db.pool.query<{ id: string }>(`SELECT id::text FROM herald.jobs WHERE queue = 'sq'`)).rows.map((r) => r.id);
    expect(seen.map((e) => e.jobId).sort()).toEqual(all.sort());
    expect(seen[0].jobId).toBe(ids[0]);
  } finally {
    await hub.stop();
  }
});

// Mutation caught: HeardQueues.settle dropping the queues given up on (`if (barrier === false) return;`).
it('a worker that gave up at the barrier waits at it again, and claims the skipper\'s job once it commits', async () => {
  const log = watchLog();
  const w = new Worker({ databaseUrl: db.url, concurrency: 4, pollMs: 60_000, queues: ['wq2'], scheduler: false, logger: log.logger, tasks: { k: async () => null } });
  await w.start();
  try {
    const { t2 } = await notifierThenSkipper('wq2', 3001);
    await log.line('gave up waiting at a wake-up barrier');
    await t2.release();
    const done = async () => (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM herald.jobs WHERE queue = 'wq2' AND status = 'succeeded'`)).rows[0].n;
    await waitFor(async () => (await done()) === 2, { what: 'the skipper\'s job after the barrier was given up on once' });
  } finally {
    await w.stop();
  }
});

// Mutation caught: the tailer not keeping the barrier due after giving up (`this.barrierDue = true;` removed).
it('the event stream that gave up at the barrier waits at it again, and publishes the skipper\'s events once it commits', async () => {
  const log = watchLog();
  const hub = await EventHub.start({ queue: db.queue, listenUrl: db.url, pool: db.pool, safetyMs: 60_000, logger: log.logger });
  const seen: JobEvent[] = [];
  hub.fanout.subscribe({ filter: { queue: 'sq2' }, deliver: (messages) => seen.push(...messages.map((m) => m.event)) });
  try {
    const { t2 } = await notifierThenSkipper('sq2', 4001);
    await log.line('gave up waiting at the events wake-up barrier');
    await t2.release();
    await waitFor(() => seen.length >= 2, { what: "both producers' events after the barrier was given up on once" });
  } finally {
    await hub.stop();
  }
});

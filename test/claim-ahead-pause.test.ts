// Jobs in a worker's claim-ahead buffer were claimed before a PATCH that pauses their queue, or
// before their expireAt passed. The promise holds for them too: none starts after the PATCH has
// returned, nor after its expireAt. The worker here polls only (its listener cannot connect, as
// behind a transaction pooler), so no notification can hand the buffer back first.
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { until } from './fixtures/worker-process.ts';
import { Worker } from '../worker/worker.ts';
import type { Job } from '../queue/job.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());
afterEach(() => worker.stop());

let started: string[];
let unblock: () => void;
let worker: Worker;
beforeEach(async () => {
  await db.pool.query('TRUNCATE herald.jobs, herald.job_events RESTART IDENTITY');
  await db.pool.query('DELETE FROM herald.queues'); // a DELETE, so the gate row follows
  started = [];
  const blocked = new Promise<void>((r) => (unblock = r));
  worker = new Worker({
    databaseUrl: db.url,
    listenUrl: 'postgres://nobody@127.0.0.1:1/none', // unreachable: polling only
    concurrency: 1,
    pollMs: 100,
    // Everything claimable goes into the buffer, and stays there until the test is done.
    claimAheadMs: 600_000,
    claimAheadTtlMs: 600_000,
    scheduler: false,
    reapEveryMs: 100,
    tasks: {
      k: async (_p, ctx) => void started.push(ctx.job.id),
      block: async (_p, ctx) => {
        started.push(ctx.job.id);
        await blocked;
      },
    },
  });
});

/**
 * Enqueues, in claim order: a quick job (its finish gives the worker a pace, so its next claim
 * takes everything ahead), a job that holds the only slot, and `x`, which then waits in the buffer.
 */
async function bufferX(x: { expireAt?: string } = {}): Promise<{ block: Job; x: Job }> {
  const made = await db.queue.enqueueMany([
    { kind: 'k', queue: 'q', priority: 10 },
    { kind: 'block', queue: 'q', priority: 5 },
    { kind: 'k', queue: 'q', priority: 0, ...x },
  ]);
  const [block, xJob] = [made[1].job, made[2].job];
  await worker.start();
  await until(async () => started.includes(block.id) && (await db.queue.get(xJob.id))?.status === 'running', 'x to wait in the buffer');
  return { block, x: xJob };
}

const statusOf = async (id: string) => (await db.queue.get(id))!.status;

it('a buffered job of a queue paused by a returned PATCH never starts, and goes back without waiting for its TTL', async () => {
  const { block, x } = await bufferX();
  await db.queue.patchQueue('q', { paused: true });
  // The slot frees right after the PATCH returned: the buffered job must not take it.
  unblock();
  await until(async () => (await statusOf(block.id)) === 'succeeded', 'the blocking job to finish');
  // Polling only, yet it is handed back (attempt refunded) long before its 10-minute TTL.
  await until(async () => (await statusOf(x.id)) === 'queued', 'the buffered job to go back to the queue');
  expect((await db.queue.get(x.id))!.attempt).toBe(0);
  await worker.stop();
  expect(started).not.toContain(x.id);
});

it('a buffered job whose expireAt passed never starts; the expiry pass ends it', async () => {
  // Far enough ahead for the claim to come first (a claim never takes an expired job).
  const { rows: [{ at }] } = await db.pool.query(`SELECT now() + interval '4 seconds' AS at`);
  const { block, x } = await bufferX({ expireAt: at.toISOString() });
  // Time passes while it waits in the buffer, until the database's clock is past its expireAt.
  await until(async () => (await db.pool.query(`SELECT now() > $1 AS past`, [at])).rows[0].past, 'expireAt to pass', 30_000);
  unblock();
  await until(async () => (await statusOf(block.id)) === 'succeeded', 'the blocking job to finish');
  await until(async () => (await statusOf(x.id)) === 'cancelled', 'the expired job to be cancelled');
  const { rows } = await db.pool.query(`SELECT type FROM herald.job_events WHERE job_id = $1 ORDER BY id`, [x.id]);
  expect(rows.map((r) => r.type)).toEqual(['enqueued', 'claimed', 'released', 'expired']);
  await worker.stop();
  expect(started).not.toContain(x.id);
});

// The gate row (queue_gate.held) under concurrent settings changes. The plain claim trusts it to
// list every paused or limited queue: a queue missing from it is claimed as if it had no settings.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { Worker } from '../worker/worker.ts';
import { waitFor } from '../test/support/wait.ts';
import { lockWaitersReach, pidOf } from '../test/support/lock-waiters.ts';

let db: TestDatabase;

beforeAll(async () => {
  // One connection per concurrent PATCH, so that they really run at once.
  db = await createTestDatabase({ poolSize: 50 });
});
afterAll(() => db.drop());

const held = async (): Promise<string[]> => (await db.pool.query('SELECT held FROM herald.queue_gate WHERE id = 1')).rows[0].held;
// Settings are rows: the gate must be right whatever writes them, the API's upsert or plain SQL.
it('two settings changes at once: the one that waited for the gate row still lists the other', async () => {
  // Session A pauses `a` and holds its transaction open: it holds the gate row's lock.
  const a = await db.pool.connect();
  try {
    await a.query('BEGIN');
    await a.query(`INSERT INTO herald.queues (queue, paused) VALUES ('race-a', true)`);
    // Session B pauses `b`: its trigger must wait for A's lock on the gate row.
    const b = db.pool.query(`INSERT INTO herald.queues (queue, paused) VALUES ('race-b', true)`);
    await lockWaitersReach(db.pool, { waiter: { app: 'herald' }, holder: await pidOf(a) });
    await a.query('COMMIT');
    await b;
  } finally {
    a.release();
  }
  expect(await held()).toEqual(['race-a', 'race-b']);
  await db.pool.query(`DELETE FROM herald.queues`);
  expect(await held()).toEqual([]);
});

it('40 queues paused by concurrent PATCHes and SQL updates while workers claim: none of them starts a job afterwards, round after round', async () => {
  const queues = Array.from({ length: 40 }, (_, i) => `p${String(i).padStart(2, '0')}`);
  const workers = [1, 2].map(
    () =>
      new Worker({
        databaseUrl: db.url,
        concurrency: 8,
        claimAheadMs: 0,
        scheduler: false,
        tasks: { k: async () => null },
      }),
  );
  await Promise.all(workers.map((w) => w.start()));
  // Every other change is an SQL UPDATE of the settings row, as an operator's script would write it.
  await Promise.all(queues.map((queue) => db.queue.patchQueue(queue, { paused: false })));
  const setPaused = (queue: string, paused: boolean, i: number) =>
    i % 2 === 0
      ? db.queue.patchQueue(queue, { paused })
      : db.pool.query('UPDATE herald.queues SET paused = $2 WHERE queue = $1', [queue, paused]);
  const enqueueAll = () => db.queue.enqueueMany(queues.flatMap((queue) => [1, 2, 3].map(() => ({ kind: 'k', queue }))));
  try {
    for (let round = 0; round < 5; round++) {
      // Workers are busy claiming these while the PATCHes run.
      await enqueueAll();
      const feeding = enqueueAll();
      await Promise.all(queues.map((queue, i) => setPaused(queue, true, i)));
      await feeding;
      expect(await held()).toEqual(queues);
      // Jobs queued now may never start while their queue is paused, fresh ones included.
      await enqueueAll();
      const { rows } = await db.pool.query<{ id: string }>(
        `SELECT id FROM herald.jobs WHERE status = 'queued' AND queue = ANY($1::text[])`,
        [queues],
      );
      expect(rows.length).toBeGreaterThanOrEqual(queues.length * 3);
      // A job of lower priority in an unpaused queue: once it ran, every claim that could have
      // taken a paused job before it has been made.
      const [{ job: sentinel }] = await db.queue.enqueueMany([{ kind: 'k', queue: 'free', priority: -1 }]);
      await waitFor(async () => (await db.queue.get(sentinel.id))?.status === 'succeeded', { what: 'the sentinel job to run' });
      const started = await db.pool.query(
        `SELECT count(*)::int AS n FROM herald.jobs WHERE id = ANY($1::bigint[]) AND status <> 'queued'`,
        [rows.map((r) => r.id)],
      );
      expect(started.rows[0].n, `round ${round}`).toBe(0);
      // Resume them all at once, and let everything run before the next round.
      await Promise.all(queues.map((queue, i) => setPaused(queue, false, i)));
      expect(await held()).toEqual([]);
      await waitFor(
        async () => (await db.pool.query(`SELECT count(*)::int AS n FROM herald.jobs WHERE status IN ('queued', 'running')`)).rows[0].n === 0, { what: 'every job to finish', timeoutMs: 60_000 });
    }
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
});

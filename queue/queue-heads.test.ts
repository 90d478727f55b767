// The queue heads behind HeraldQueueStalled and HeraldNoWorker are read on every scrape: with a
// large history beside the queued jobs the read walks the partial index queue by queue and never
// scans the table; past the jobs no live worker runs, it walks a bounded number.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { QUEUE_HEAD_LOOK_PAST } from './defaults.ts';
import { queueHeads } from './sql/queue-heads.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

it('finds each queue’s oldest ready job by index, not by reading the jobs', async () => {
  // 60,000 finished jobs in 6 queues, and a few queued ones in three of them.
  await db.pool.query(`
    INSERT INTO herald.jobs (queue, kind, status, attempt, started_at, finished_at)
    SELECT 'q' || (i % 6), 'k', 'succeeded', 1, now(), now() FROM generate_series(1, 60000) i`);
  await db.pool.query(`
    INSERT INTO herald.jobs (queue, kind, available_at)
    SELECT 'q' || (i % 3), 'k', now() - make_interval(secs => i) FROM generate_series(1, 30) i`);
  await db.pool.query('ANALYZE herald.jobs');

  const { rows } = await db.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${queueHeads.text}`);
  const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
  expect(plan).toContain('jobs_queued_queue');
  expect(plan).not.toMatch(/Seq Scan on jobs/);

  const heads = await db.queue.queueHeads();
  expect(heads.map((h) => h.queue)).toEqual(['q0', 'q1', 'q2']);
  // q0 holds i = 3, 6, ..., 30: its oldest became ready 30 s ago, and no live worker runs it.
  expect(heads[0]).toMatchObject({ oldestReadyS: null, liveWorkers: 0, noWorker: { kind: 'k' } });
  expect(heads[0].noWorker!.seconds).toBeGreaterThanOrEqual(30);
});

// Catches: a walk past the jobs no live worker runs that is not bounded (QUEUE_HEAD_LOOK_PAST).
it(`looks past at most ${QUEUE_HEAD_LOOK_PAST} ready jobs no live worker runs to find the oldest one it runs`, async () => {
  await db.pool.query('TRUNCATE herald.jobs, herald.workers');
  await db.queue.registerWorker({ id: 'h:1:w', host: 'h', pid: 1, queues: ['near', 'far'], kinds: ['echo'], capabilities: [], concurrency: 1, lockKey: null });
  await db.pool.query(`UPDATE herald.workers SET last_seen_at = now() + interval '1 hour'`);
  // near: 10 jobs of a kind nobody knows, then one the worker runs. far: as many of them as the walk looks at.
  for (const [queue, n] of [['near', 10], ['far', QUEUE_HEAD_LOOK_PAST]] as const) {
    await db.pool.query(
      `INSERT INTO herald.jobs (queue, kind, available_at) SELECT $1, 'ech0', now() - make_interval(secs => 1000 + i) FROM generate_series(1, $2::int) i`,
      [queue, n],
    );
    await db.pool.query(`INSERT INTO herald.jobs (queue, kind, available_at) VALUES ($1, 'echo', now() - interval '500 s')`, [queue]);
  }
  const heads = await db.queue.queueHeads();
  expect(heads.map((h) => [h.queue, h.noWorker?.kind, h.liveWorkers])).toEqual([['far', 'ech0', 1], ['near', 'ech0', 1]]);
  expect(heads[1].oldestReadyS).toBeGreaterThanOrEqual(500);
  expect(heads[1].oldestReadyS).toBeLessThan(1000);
  expect(heads[0].oldestReadyS).toBeNull();
});

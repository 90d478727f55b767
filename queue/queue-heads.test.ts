// The queue heads behind HeraldQueueStalled and HeraldNoWorker are read on every scrape: with a
// large history beside the queued jobs the read walks the partial index queue by queue and never
// scans the table.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
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
  // q0 holds i = 3, 6, ..., 30: its oldest became ready 30 s ago.
  expect(heads[0].oldestReadyS).toBeGreaterThanOrEqual(30);
  expect(heads[0].liveWorkers).toBe(0);
});

// Three worker processes with ten slots each share 5,000 jobs, a fifth of them failing once:
// every job succeeds exactly once, and the attempts agree with the event log.
import { expect, it } from 'vitest';
import { workerTestContext } from '../fixtures/worker-process.ts';
import { waitFor } from '../support/wait.ts';

const JOBS = 5_000;
const t = workerTestContext();

it('runs 5,000 jobs on 3 workers × 10 slots: each succeeds once, attempts match the events', { timeout: 120_000 }, async () => {
  // info, not debug: 5,000 jobs of debug lines would only slow the workers down.
  const env = { HERALD_BACKOFF_BASE_MS: '50', HERALD_LOG_LEVEL: 'info' };
  const { db } = t;
  await Promise.all([1, 2, 3].map(() => t.spawn({ env, args: ['--concurrency', '10'] })));
  const inputs = Array.from({ length: JOBS }, (_, i) =>
    i % 5 === 0
      ? { kind: 'flaky', payload: { failTimes: 1 } }
      : { kind: 'sleep', payload: { ms: Math.floor(Math.random() * 6) } },
  );
  for (let i = 0; i < JOBS; i += 1_000) await db.queue.enqueueMany(inputs.slice(i, i + 1_000));

  await waitFor(async () => {
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM herald.jobs WHERE status <> 'succeeded'`);
    return rows[0].n === 0;
  }, { what: 'all jobs to succeed', timeoutMs: 100_000, everyMs: 200 });

  const { rows } = await db.pool.query(`
    SELECT j.id, j.kind, j.attempt,
           count(*) FILTER (WHERE e.type = 'claimed')::int AS claimed,
           count(*) FILTER (WHERE e.type = 'succeeded')::int AS succeeded,
           count(*) FILTER (WHERE e.type = 'retry_scheduled')::int AS retries,
           count(DISTINCT e.worker) FILTER (WHERE e.type = 'claimed')::int AS workers
    FROM herald.jobs j JOIN herald.job_events e ON e.job_id = j.id
    GROUP BY j.id`);
  expect(rows).toHaveLength(JOBS);
  for (const r of rows) {
    expect(r.succeeded).toBe(1);
    expect(r.claimed).toBe(r.attempt);
    expect(r.retries).toBe(r.attempt - 1);
    expect(r.attempt).toBe(r.kind === 'flaky' ? 2 : 1);
  }
  // The work was shared.
  const { rows: per } = await db.pool.query(`SELECT count(DISTINCT worker)::int AS n FROM herald.job_events WHERE type = 'claimed'`);
  expect(per[0].n).toBe(3);
});

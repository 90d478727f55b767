// Herald as a bench peer: the real worker runtime (startWorker, in-process) with a no-op task,
// driven exactly like the peers in bench/peers/ (same harness, same concurrency, same timing).
// Herald writes its full event log throughout: every claim and completion adds job_events rows.
import type pg from 'pg';
import { createPool } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';
import { startWorker } from '../worker/index.ts';
import type { WorkerOptions } from '../worker/options.ts';
import { CONCURRENCY, Countdown, LatencyProbe, untilZero, withClient } from './peers/harness.ts';
import type { PeerRunner } from './peers/types.ts';

const KIND = 'noop';
const INSERT_CHUNK = 5_000;

async function reset(databaseUrl: string): Promise<void> {
  await migrate(databaseUrl);
  await withClient(databaseUrl, (c) => c.query('TRUNCATE herald.jobs, herald.job_events RESTART IDENTITY'));
}

/** A producer's pool: durable commits, as any producer's (the worker's own pool is separate). */
function producer(databaseUrl: string): { pool: pg.Pool; queue: Queue } {
  const pool = createPool(databaseUrl, { max: 1, applicationName: 'herald:bench-producer' });
  return { pool, queue: new Queue(pool) };
}

/** Extra worker settings from the environment, to measure one change at a time. */
function tuning(): Partial<WorkerOptions> {
  const t: Partial<WorkerOptions> = {};
  if (process.env.BENCH_HERALD_CLAIM_AHEAD_MS) t.claimAheadMs = Number(process.env.BENCH_HERALD_CLAIM_AHEAD_MS);
  return t;
}

function worker(databaseUrl: string, noop: (payload: { i?: number }) => void) {
  return startWorker({
    databaseUrl,
    concurrency: CONCURRENCY,
    tasks: { [KIND]: async (payload) => noop(payload as { i?: number }) },
    // Defaults as shipped (durable commits: the bench database's synchronous_commit decides, as
    // for every peer); only the task set is the bench's.
    ...tuning(),
  });
}

export function makeHeraldRunner(): PeerRunner {
  return {
    name: 'herald',

    async drain(databaseUrl, jobs) {
      await reset(databaseUrl);
      const { pool, queue } = producer(databaseUrl);
      try {
        for (let done = 0; done < jobs; done += INSERT_CHUNK) {
          const n = Math.min(INSERT_CHUNK, jobs - done);
          await queue.enqueueMany(Array.from({ length: n }, () => ({ kind: KIND, payload: {} })));
        }
        // Not timed. A fresh database has no planner statistics until autovacuum's first
        // ANALYZE (within a minute, normally; never on a server with autovacuum off, like this
        // machine's PG 15). Without them the planner takes the queue for empty and the claim
        // sorts every queued row instead of walking its index (see the bench notes).
        await pool.query('ANALYZE herald.jobs');
        const handled = new Countdown(jobs);
        const t0 = performance.now();
        const w = await worker(databaseUrl, () => handled.tick());
        try {
          await handled.promise;
          // Outcomes are written in batches after the handlers return: wait until all landed.
          const left = `SELECT count(*)::int AS n FROM herald.jobs WHERE status <> 'succeeded'`;
          await untilZero(async () => (await pool.query<{ n: number }>(left)).rows[0].n);
          return jobs / ((performance.now() - t0) / 1000);
        } finally {
          await w.stop();
        }
      } finally {
        await pool.end();
      }
    },

    async latency(databaseUrl, count, intervalMs) {
      await reset(databaseUrl);
      const { pool, queue } = producer(databaseUrl);
      const probe = new LatencyProbe();
      // startWorker resolves once the worker listens: it is idle and listening from here on.
      const w = await worker(databaseUrl, (payload) => probe.started(payload.i!));
      try {
        return await probe.run(count, intervalMs, (i) => queue.enqueue({ kind: KIND, payload: { i } }));
      } finally {
        await w.stop();
        await pool.end();
      }
    },
  };
}

export default makeHeraldRunner();

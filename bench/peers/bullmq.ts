// BullMQ 6 on PostgreSQL (createPostgresBackend) peer, with its defaults: one Worker of
// concurrency 16; completed jobs stay in the table (removeOnComplete is off by default).
import { Queue, Worker, createPostgresBackend, runMigrations, type JobProgress, type PostgresConnectionOptions, type PostgresQueueBackend } from 'bullmq';
import { CONCURRENCY, Countdown, LatencyProbe, analyzeSchema, dropSchema, withClient } from './harness.ts';
import type { PeerRunner } from './types.ts';

const SCHEMA = 'bullmq';
const QUEUE = 'noop';
const INSERT_CHUNK = 5_000;

/** Fresh schema, migrated explicitly (BullMQ never migrates on connect). */
async function reset(databaseUrl: string): Promise<void> {
  await dropSchema(databaseUrl, SCHEMA);
  await withClient(databaseUrl, (c) => runMigrations(c, SCHEMA));
}

const opts = (databaseUrl: string) => ({ connection: { connectionString: databaseUrl, schema: SCHEMA } });

type PgWorker = Worker<unknown, unknown, string, PostgresQueueBackend, JobProgress, PostgresConnectionOptions>;

function worker(databaseUrl: string, handler: (data: { i?: number }) => void): PgWorker {
  return new Worker(QUEUE, async (job) => handler(job.data as { i?: number }), { ...opts(databaseUrl), concurrency: CONCURRENCY }, createPostgresBackend);
}

const bullmq: PeerRunner = {
  name: 'bullmq',

  async drain(databaseUrl, jobs) {
    await reset(databaseUrl);
    const queue = new Queue(QUEUE, opts(databaseUrl), createPostgresBackend);
    try {
      for (let done = 0; done < jobs; done += INSERT_CHUNK) {
        const n = Math.min(INSERT_CHUNK, jobs - done);
        await queue.addBulk(Array.from({ length: n }, () => ({ name: QUEUE, data: {} })));
      }
      await analyzeSchema(databaseUrl, SCHEMA);
      const completed = new Countdown(jobs);
      const t0 = performance.now();
      const w = worker(databaseUrl, () => {});
      // 'completed' is emitted once the completion has committed.
      w.on('completed', () => completed.tick());
      try {
        await completed.promise;
        return jobs / ((performance.now() - t0) / 1000);
      } finally {
        await w.close();
      }
    } finally {
      await queue.close();
    }
  },

  async latency(databaseUrl, count, intervalMs) {
    await reset(databaseUrl);
    const queue = new Queue(QUEUE, opts(databaseUrl), createPostgresBackend);
    const probe = new LatencyProbe();
    const w = worker(databaseUrl, (data) => probe.started(data.i!));
    try {
      await w.waitUntilReady();
      await queue.waitUntilReady();
      return await probe.run(count, intervalMs, (i) => queue.add(QUEUE, { i }));
    } finally {
      await w.close();
      await queue.close();
    }
  },
};

export default bullmq;

// pg-boss@12 peer: batch-fetching workers woken by LISTEN/NOTIFY on a notify-enabled queue.
import pg from 'pg';
import { PgBoss, type WorkOptions } from 'pg-boss';
import { CONCURRENCY, Countdown, LatencyProbe, analyzeSchema, dropSchema, untilZero } from './harness.ts';
import type { PeerRunner } from './types.ts';

const SCHEMA = 'pgboss_bench';
const QUEUE = 'noop';
const INSERT_CHUNK = 5_000;

const WORK: WorkOptions = {
  batchSize: 500, // the claim size every peer gets

  localConcurrency: CONCURRENCY,
  // Without this a worker that just emptied a full batch sleeps out its poll interval
  // (30 s on a notify queue) even though more jobs are waiting; a drain would mostly sleep.
  burstWhenBatchFull: true,
};

let silenced = 0;

/** A started instance with its LISTEN connection up (on a fresh schema when `fresh`). */
async function start(databaseUrl: string, fresh = true): Promise<PgBoss> {
  if (fresh) await dropSchema(databaseUrl, SCHEMA);
  const boss = new PgBoss({ connectionString: databaseUrl, schema: SCHEMA, useListenNotify: true });
  // Keep the bench output clean but don't lose track: 'error' would otherwise crash the process.
  boss.on('error', () => void silenced++);
  boss.on('warning', () => void silenced++);
  await boss.start(); // resolves after the notifier's LISTEN is established
  if (fresh) await boss.createQueue(QUEUE, { notify: true });
  return boss;
}

const pgboss: PeerRunner = {
  name: 'pgboss',
  silencedErrors: () => silenced,

  async drain(databaseUrl, jobs) {
    silenced = 0;
    const producer = await start(databaseUrl);
    try {
      for (let done = 0; done < jobs; done += INSERT_CHUNK) {
        const n = Math.min(INSERT_CHUNK, jobs - done);
        await producer.insert(QUEUE, Array.from({ length: n }, () => ({ data: {} })));
      }
    } finally {
      await producer.stop();
    }
    await analyzeSchema(databaseUrl, SCHEMA);
    const probe = new pg.Client({ connectionString: databaseUrl });
    await probe.connect();
    const handled = new Countdown(jobs);
    // The worker's instance starts inside the timing, as every other runner's worker does.
    const t0 = performance.now();
    const boss = await start(databaseUrl, false);
    try {
      await boss.work(QUEUE, WORK, async (batch) => handled.tick(batch.length));
      await handled.promise;
      // Completion is a separate statement after the handler resolves: wait until it landed.
      const left = `SELECT count(*)::int AS n FROM ${SCHEMA}.job WHERE name = $1 AND state <> 'completed'`;
      await untilZero(async () => (await probe.query<{ n: number }>(left, [QUEUE])).rows[0].n);
      return jobs / ((performance.now() - t0) / 1000);
    } finally {
      await probe.end();
      await boss.stop();
    }
  },

  async latency(databaseUrl, count, intervalMs) {
    silenced = 0;
    const boss = await start(databaseUrl);
    try {
      const probe = new LatencyProbe();
      await boss.work<{ i: number }>(QUEUE, WORK, async (batch) => {
        for (const job of batch) probe.started(job.data.i);
      });
      return await probe.run(count, intervalMs, (i) => boss.send(QUEUE, { i }));
    } finally {
      await boss.stop();
    }
  },
};

export default pgboss;

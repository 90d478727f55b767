// `npm run bench -- --search [--json]`: what search costs at a million jobs, and what the index
// it does without would have cost enqueue. One database (herald_bench_search):
//   1. 1,000,000 jobs (payload {customer, region}, 5% failed with an error message);
//   2. enqueue: jobs/s of Queue.enqueueMany in batches of 500 into that table, without and with
//      a GIN index on payload (jsonb_path_ops), 100,000 jobs a round: enough to overflow the
//      index's pending list (4 MB) several times, where a GIN index pays for its inserts;
//   3. the median latency of the first page (50) of each search, and of a bulk dry-run count.
// BENCH_SEARCH_JOBS changes the size (default 1,000,000).
import { createPool } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';
import type { JobFilter } from '../queue/search.ts';

const GIN = `CREATE INDEX IF NOT EXISTS bench_payload_gin ON herald.jobs USING gin (payload jsonb_path_ops)`;
const DROP_GIN = `DROP INDEX IF EXISTS herald.bench_payload_gin`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round1 = (x: number) => Math.round(x * 10) / 10;

async function enqueueRate(queue: Queue, jobs: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < jobs; i += 500) {
    await queue.enqueueMany(Array.from({ length: 500 }, (_, k) => ({ kind: 'bench', queue: 'enq', payload: { customer: (i + k) % 1000, region: 'eu' } })));
  }
  return jobs / ((performance.now() - t0) / 1000);
}

async function timeMs(fn: () => Promise<unknown>, runs = 7): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    xs.push(performance.now() - t0);
  }
  return round1(median(xs));
}

export async function searchBench(url: string, say: (line: string) => void): Promise<Record<string, unknown>> {
  const size = Number(process.env.BENCH_SEARCH_JOBS ?? 1_000_000);
  await migrate(url);
  const pool = createPool(url, { max: 2, applicationName: 'herald:bench-search' });
  const queue = new Queue(pool);
  try {
    // A million jobs in 10 queues, 5% failed, written in chunks (through the triggers).
    say(`  filling ${size.toLocaleString('en-US')} jobs…`);
    for (let from = 0; from < size; from += 50_000) {
      await pool.query(
        `INSERT INTO herald.jobs (kind, queue, payload, status, attempt, max_attempts, started_at, finished_at, last_error, created_at)
         SELECT 'bench', 'q' || (i % 10), jsonb_build_object('customer', i % 5000, 'region', CASE WHEN i % 3 = 0 THEN 'eu' ELSE 'us' END),
                CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'succeeded' END::herald.job_status, 1, 1, now(), now(),
                CASE WHEN i % 20 = 0 THEN jsonb_build_object('message', 'upstream timeout after ' || (i % 97) || ' s') END,
                now() - make_interval(secs => ($2::int - i) * 0.5)
         FROM generate_series($1::int, least($1::int + 49999, $2::int - 1)) i`,
        [from, size],
      );
    }
    await pool.query('VACUUM ANALYZE herald.jobs');

    // The enqueue cost of a payload GIN index, into the full table: rounds in ABBA order (no
    // index, index, index, no index) so both see the same machine; each round's jobs are
    // deleted again before the next.
    const plain: number[] = [];
    const gin: number[] = [];
    for (const withGin of [false, true, true, false]) {
      await pool.query(withGin ? GIN : DROP_GIN);
      const rate = await enqueueRate(queue, 100_000);
      (withGin ? gin : plain).push(rate);
      say(`  enqueue ${withGin ? 'with GIN' : 'no GIN  '} ${Math.round(rate)} jobs/s`);
      await pool.query(`DELETE FROM herald.job_events WHERE queue = 'enq'`);
      await pool.query(`DELETE FROM herald.jobs WHERE queue = 'enq'`);
      await pool.query('VACUUM herald.jobs, herald.job_events');
    }
    await pool.query(DROP_GIN);
    const oldest = (await pool.query<{ t: Date }>(`SELECT min(created_at) AS t FROM herald.jobs`)).rows[0].t;
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();

    const searches: Record<string, JobFilter> = {
      // 1 in 5,000 payloads: a first page needs most of the 100k window.
      payloadRare: { payload: { customer: 4242 } },
      payloadCommon: { payload: { region: 'eu' } },
      payloadInQueue: { queue: 'q3', payload: { customer: 4243 } },
      errorSubstring: { error: 'TIMEOUT AFTER 42 s' },
      createdLastHour: { createdAfter: hourAgo },
      createdRangeOld: { createdAfter: oldest.toISOString(), createdBefore: new Date(oldest.getTime() + 60_000).toISOString() },
      statusFailed: { status: 'failed', queue: 'q5' },
    };
    const latencyMs: Record<string, number> = {};
    for (const [name, f] of Object.entries(searches)) {
      latencyMs[name] = await timeMs(() => queue.list({ ...f, limit: 50 }));
      say(`  search ${name.padEnd(16)} ${latencyMs[name]} ms`);
    }
    const dryRunMs = await timeMs(() => queue.bulkDryRun('retry', { queue: 'q3', payload: { customer: 4243 } }), 3);
    say(`  bulk dry-run count (queue + payload, whole table) ${dryRunMs} ms`);
    await pool.query(GIN);
    await pool.query('ANALYZE herald.jobs');
    const ginPayloadRareMs = await timeMs(() => queue.list({ payload: { customer: 4242 }, limit: 50 }));
    say(`  with a GIN index: search payloadRare ${ginPayloadRareMs} ms`);
    return {
      jobs: size,
      // Every round, in ABBA order: on a busy machine the spread says more than one ratio.
      enqueuePerSec: { plain: plain.map(Math.round), gin: gin.map(Math.round) },
      searchMs: latencyMs,
      bulkDryRunMs: dryRunMs,
      ginPayloadRareMs,
    };
  } finally {
    await pool.end();
  }
}

// Two loops straight through the core API (no worker runtime, no HTTP): 10,000 jobs enqueued in
// batches, then claimed and completed 500 at a time, on one connection (BENCH_CORE_JOBS and
// BENCH_CORE_BATCH change both numbers).
//   node bin/run-ts.js bench/core-loop.ts [DATABASE_URL]
// Besides jobs/s it prints the server backend's CPU time per job when PostgreSQL runs on this
// machine (read from /proc): on a shared, busy machine that figure moves far less than wall time,
// so it is the one to compare schema or SQL variants by.
import pg from 'pg';
import { createPool } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';
import { backendPid, freshBenchDatabase, processCpuUs } from './peers/harness.ts';

const JOBS = Number(process.env.BENCH_CORE_JOBS ?? 10_000);
const BATCH = Number(process.env.BENCH_CORE_BATCH ?? 500);
const base = process.argv[2] ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const url = await freshBenchDatabase(base, 'core_loop');
await migrate(url);
// HERALD_CORE_LOOP_SQL: a schema variant to try (an experiment aid, e.g. dropping an index).
if (process.env.HERALD_CORE_LOOP_SQL) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(process.env.HERALD_CORE_LOOP_SQL);
  await c.end();
}
const pool = createPool(url, { max: 1 });
const q = new Queue(pool);

const backend = await backendPid(pool);
const backendCpuUs = () => processCpuUs(backend);
const wal = async () => (await pool.query<{ lsn: string }>(`SELECT pg_current_wal_lsn()::text AS lsn`)).rows[0].lsn;
const walBytes = async (from: string) => Number((await pool.query<{ d: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS d`, [from])).rows[0].d);

let cpu = backendCpuUs();
let lsn = await wal();
let t = performance.now();
for (let i = 0; i < JOBS; i += BATCH) {
  await q.enqueueMany(Array.from({ length: BATCH }, (_, j) => ({ kind: 'noop', payload: { n: i + j } })));
}
const enqueueMs = performance.now() - t;
const enqueueCpu = backendCpuUs() - cpu;
const enqueueWal = await walBytes(lsn);
// Untimed, as in `npm run bench`: the claim is planned with statistics in place.
await pool.query('ANALYZE herald.jobs');

cpu = backendCpuUs();
lsn = await wal();
t = performance.now();
let done = 0;
let claimCpu = 0;
for (;;) {
  const before = backendCpuUs();
  const jobs = await q.claim({ worker: 'bench:1:x', limit: BATCH });
  claimCpu += backendCpuUs() - before;
  if (jobs.length === 0) break;
  const lost = await q.complete('bench:1:x', jobs.map((j) => ({ id: j.id, attempt: j.attempt, result: null })));
  done += jobs.length - lost.length;
}
const drainMs = performance.now() - t;
const drainCpu = backendCpuUs() - cpu;
const drainWal = await walBytes(lsn);
const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM herald.job_events`);
const version = (await pool.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
await pool.end();

console.log(`PostgreSQL ${version}`);
console.log(`enqueue ${JOBS} in batches of ${BATCH}: ${enqueueMs.toFixed(0)} ms = ${Math.round(JOBS / (enqueueMs / 1000))} jobs/s`);
console.log(`claim+complete ${done} in batches of ${BATCH}: ${drainMs.toFixed(0)} ms = ${Math.round(done / (drainMs / 1000))} jobs/s`);
console.log(`events written: ${rows[0].n} (3 per job)`);
console.log(`server CPU µs/job: enqueue ${(enqueueCpu / JOBS).toFixed(1)}, claim+complete ${(drainCpu / done).toFixed(1)} (claim ${(claimCpu / done).toFixed(1)})`);
// Cluster-wide: other databases' writes on a shared server count too.
console.log(`WAL bytes/job: enqueue ${Math.round(enqueueWal / JOBS)}, claim+complete ${Math.round(drainWal / done)}`);

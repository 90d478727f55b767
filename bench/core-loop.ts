// Two loops straight through the core API (no worker runtime, no HTTP), beside a bare-SQL floor
// (the same work as hand-written SQL, the most any design could get): 10,000 jobs enqueued in
// batches, then claimed and completed 500 at a time.
//   node bin/run-ts.js bench/core-loop.ts [DATABASE_URL]
import pg from 'pg';
import { createPool, withDatabase } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';

const JOBS = 10_000;
const BATCH = 500;
const base = process.argv[2] ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query('DROP DATABASE IF EXISTS herald_core_loop');
await admin.query('CREATE DATABASE herald_core_loop');
await admin.end();
const url = withDatabase(base, 'herald_core_loop');
await migrate(url);
// HERALD_CORE_LOOP_SQL: a schema variant to try (an experiment aid, e.g. dropping an index).
if (process.env.HERALD_CORE_LOOP_SQL) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  await c.query(process.env.HERALD_CORE_LOOP_SQL);
  await c.end();
}
const pool = createPool(url, { max: 4 });
const q = new Queue(pool);

let t = performance.now();
for (let i = 0; i < JOBS; i += BATCH) {
  await q.enqueueMany(Array.from({ length: BATCH }, (_, j) => ({ kind: 'noop', payload: { n: i + j } })));
}
const enqueueMs = performance.now() - t;

t = performance.now();
let done = 0;
for (;;) {
  const jobs = await q.claim({ worker: 'bench:1:x', limit: BATCH });
  if (jobs.length === 0) break;
  const lost = await q.complete('bench:1:x', jobs.map((j) => ({ id: j.id, attempt: j.attempt, result: null })));
  done += jobs.length - lost.length;
}
const drainMs = performance.now() - t;
const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM herald.job_events`);
const version = (await pool.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
await pool.end();

console.log(`PostgreSQL ${version}`);
console.log(`enqueue ${JOBS} in batches of ${BATCH}: ${enqueueMs.toFixed(0)} ms = ${Math.round(JOBS / (enqueueMs / 1000))} jobs/s`);
console.log(`claim+complete ${done} in batches of ${BATCH}: ${drainMs.toFixed(0)} ms = ${Math.round(done / (drainMs / 1000))} jobs/s`);
console.log(`events written: ${rows[0].n} (3 per job)`);

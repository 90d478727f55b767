// Where a job's WAL goes, by relation, read back with pg_walinspect (PostgreSQL 15 or later):
//   node bin/run-ts.js bench/wal-by-relation.ts [DATABASE_URL]
// Once commits queue on the WAL flush (many producers, a fast drain), what a job costs is mostly
// its WAL bytes. Two phases, per job:
//   - single-job INSERTs into herald.jobs, against the same into a table of the same shape with no
//     trigger (the statement of `npm run bench -- --producers`);
//   - the claim and completion of BENCH_CORE_JOBS (10,000) jobs, BENCH_CORE_BATCH (500) at a time,
//     as in bench/core-loop.ts.
// Each phase starts after a CHECKPOINT, so the full-page images (FPI) are those of a first touch
// after one; the record bytes do not depend on that.
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import { dropBenchDatabase, freshBenchDatabase } from './peers/harness.ts';
import { setupProducers } from './producers.ts';

const JOBS = Number(process.env.BENCH_CORE_JOBS ?? 10_000);
const BATCH = Number(process.env.BENCH_CORE_BATCH ?? 500);
const INSERTS = 2_000;
const base = process.argv[2] ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface Share {
  what: string;
  records: number;
  bytes: number;
  fpi: number;
}

const url = await freshBenchDatabase(base, 'wal_by_relation');
await setupProducers(url);
const pool = createPool(url, { max: 1 });
const q = new Queue(pool);
await pool.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');

const lsn = async () => (await pool.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0].l;

/** The WAL written while `run` ran, per job, by relation (or record type when it names none). */
async function walOf(jobs: number, run: () => Promise<void>): Promise<Share[]> {
  await pool.query('CHECKPOINT');
  const from = await lsn();
  await run();
  const to = await lsn();
  // pg_walinspect reads only flushed WAL (the worker's outcomes may commit asynchronously).
  while (!(await pool.query<{ ok: boolean }>('SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS ok', [to])).rows[0].ok) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const { rows } = await pool.query<Share>(
    `WITH r AS (
       SELECT resource_manager || '/' || record_type AS kind, record_length, fpi_length,
              regexp_match(block_ref, 'rel \\d+/(\\d+)/(\\d+)') AS rel
       FROM pg_get_wal_records_info($1, $2))
     SELECT coalesce(c.oid::regclass::text, r.kind) AS what, count(*)::float8 / $3 AS records,
            sum(r.record_length - r.fpi_length)::float8 / $3 AS bytes, sum(r.fpi_length)::float8 / $3 AS fpi
     FROM r
     LEFT JOIN pg_class c ON c.relfilenode = r.rel[2]::oid
       AND r.rel[1]::oid = (SELECT oid FROM pg_database WHERE datname = current_database())
     GROUP BY 1 ORDER BY 3 DESC`,
    [from, to, jobs],
  );
  return rows;
}

function print(title: string, shares: Share[]): void {
  const total = shares.reduce((s, r) => s + r.bytes, 0);
  const fpi = shares.reduce((s, r) => s + r.fpi, 0);
  console.log(`\n${title}: ${Math.round(total)} record bytes a job (+ ${Math.round(fpi)} in full-page images)`);
  for (const r of shares.filter((s) => s.bytes >= 0.5)) {
    console.log(`  ${r.what.padEnd(46)} ${r.records.toFixed(2).padStart(6)} records ${String(Math.round(r.bytes)).padStart(6)} bytes`);
  }
}

const insertInto = (table: string) => async () => {
  for (let i = 0; i < INSERTS; i++) await pool.query(`INSERT INTO ${table} (queue, kind, payload) VALUES ('default', 'noop', '{}')`);
};
// Warm: the first statements of a session plan and cache what later ones reuse.
await insertInto('bench_plain.jobs')();
await insertInto('herald.jobs')();
print('single-job INSERT, no trigger', await walOf(INSERTS, insertInto('bench_plain.jobs')));
print('single-job INSERT into herald.jobs', await walOf(INSERTS, insertInto('herald.jobs')));

await pool.query('TRUNCATE herald.jobs CASCADE');
for (let i = 0; i < JOBS; i += BATCH) {
  await q.enqueueMany(Array.from({ length: BATCH }, (_, j) => ({ kind: 'noop', payload: { n: i + j } })));
}
await pool.query('ANALYZE herald.jobs');
print(`claim and completion, ${BATCH} at a time`, await walOf(JOBS, async () => {
  for (;;) {
    const jobs = await q.claim({ worker: 'bench:1:x', limit: BATCH });
    if (jobs.length === 0) return;
    await q.complete('bench:1:x', jobs.map((j) => ({ id: j.id, attempt: j.attempt, result: null })));
  }
}));

await pool.end();
await dropBenchDatabase(base, 'wal_by_relation');

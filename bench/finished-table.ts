// What moving finished jobs off the hot table would save a claim and its completion:
//   node bin/run-ts.js bench/finished-table.ts [DATABASE_URL]
// Bare copies of herald.jobs (its columns, checks, domains and indexes; no trigger, so no events or
// counts), BENCH_CORE_JOBS (20,000) jobs claimed and completed BENCH_CORE_BATCH (500) at a time on
// one connection, in three layouts, alternating over BENCH_ROUNDS (3) rounds, medians:
//   - one:    today's single table; a completion updates the row in place;
//   - split:  a hot table without the finished-only indexes (jobs_finished, jobs_status_queue),
//             and a finished table with the listing indexes, that a completion moves the row to
//             (DELETE … RETURNING into INSERT, one statement);
//   - bound:  the split, with the listing indexes (by queue, by kind) also gone from the hot table.
//             The board and search list queued jobs by those, so this is an upper bound, not a
//             layout Herald could ship.
// CPU is the backend's, read from /proc (PostgreSQL on this machine); WAL is per job.
import pg from 'pg';
import { migrate } from '../queue/migrate.ts';
import { backendPid, dropBenchDatabase, freshBenchDatabase, median, processCpuUs, rotate } from './peers/harness.ts';

const JOBS = Number(process.env.BENCH_CORE_JOBS ?? 20_000);
const BATCH = Number(process.env.BENCH_CORE_BATCH ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const base = process.argv[2] ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

type Layout = 'one' | 'split' | 'bound';
interface Figures {
  jobsPerS: number;
  claimCpuUs: number;
  completeCpuUs: number;
  claimWal: number;
  completeWal: number;
}

const url = await freshBenchDatabase(base, 'finished_table');
await migrate(url);
const db = new pg.Client({ connectionString: url });
await db.connect();

const pid = await backendPid(db);
const cpuUs = () => processCpuUs(pid);
const lsn = async () => (await db.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0].l;
const walSince = async (from: string) =>
  Number((await db.query<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1) AS d', [from])).rows[0].d);

// Every column but id, in table order; the move rewrites the ones a completion sets.
const columns = (
  await db.query<{ c: string }>(
    `SELECT quote_ident(attname) AS c FROM pg_attribute
     WHERE attrelid = 'herald.jobs'::regclass AND attnum > 0 AND NOT attisdropped AND attname <> 'id' ORDER BY attnum`,
  )
).rows.map((r) => r.c);
const completed: Record<string, string> = {
  status: `'succeeded'`,
  finished_at: 'now()',
  locked_by: 'NULL',
  lease_expires_at: 'NULL',
  owner_lock: 'NULL',
  result: `'null'::jsonb`,
};
const moved = columns.map((c) => completed[c] ?? c).join(', ');

async function setUp(layout: Layout): Promise<void> {
  await db.query('DROP TABLE IF EXISTS hot, finished');
  await db.query('CREATE TABLE hot (LIKE herald.jobs INCLUDING ALL)');
  if (layout !== 'one') {
    await db.query('CREATE TABLE finished (LIKE herald.jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)');
    await db.query(`ALTER TABLE finished ADD PRIMARY KEY (id);
      CREATE INDEX ON finished (queue, id DESC); CREATE INDEX ON finished (kind, queue, id DESC);
      CREATE INDEX ON finished (status, queue, id DESC); CREATE INDEX ON finished (finished_at)`);
    // LIKE names the copied indexes after their columns; drop them by what they cover.
    const drop = ['finished_at', 'status_queue_id', ...(layout === 'bound' ? ['queue_id', 'kind_queue_id'] : [])];
    for (const suffix of drop) await db.query(`DROP INDEX hot_${suffix}_idx`);
  }
  await db.query(
    `INSERT INTO hot (kind, payload) SELECT 'noop', jsonb_build_object('n', g) FROM generate_series(1, $1::int) g`,
    [JOBS],
  );
  await db.query('ANALYZE hot');
  await db.query('CHECKPOINT');
}

async function drain(layout: Layout): Promise<Figures> {
  let claimCpu = 0;
  let claimWal = 0;
  const cpu0 = cpuUs();
  const wal0 = await lsn();
  const t0 = performance.now();
  for (;;) {
    const [cpu, wal] = [cpuUs(), await lsn()];
    const { rows } = await db.query<{ id: string }>(
      `UPDATE hot j SET status = 'running', attempt = attempt + 1, started_at = now(), locked_by = 'w',
         lease_expires_at = now() + interval '30 s'
       FROM (SELECT id FROM hot WHERE status = 'queued' AND available_at <= now()
             ORDER BY priority DESC, available_at, created_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) s
       WHERE j.id = s.id RETURNING j.id`,
      [BATCH],
    );
    claimCpu += cpuUs() - cpu;
    claimWal += await walSince(wal);
    if (rows.length === 0) break;
    const ids = rows.map((r) => r.id);
    if (layout === 'one') {
      await db.query(
        `UPDATE hot SET status = 'succeeded', finished_at = now(), locked_by = NULL, lease_expires_at = NULL,
           result = 'null' WHERE id = ANY($1) AND status = 'running'`,
        [ids],
      );
    } else {
      await db.query(
        `WITH done AS (DELETE FROM hot WHERE id = ANY($1) AND status = 'running' RETURNING *)
         INSERT INTO finished OVERRIDING SYSTEM VALUE SELECT id, ${moved} FROM done`,
        [ids],
      );
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const [cpu, wal] = [cpuUs() - cpu0, await walSince(wal0)];
  return {
    jobsPerS: JOBS / seconds,
    claimCpuUs: claimCpu / JOBS,
    completeCpuUs: (cpu - claimCpu) / JOBS,
    claimWal: claimWal / JOBS,
    completeWal: (wal - claimWal) / JOBS,
  };
}

const layouts: Layout[] = ['one', 'split', 'bound'];
const runs = new Map<Layout, Figures[]>(layouts.map((l) => [l, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const layout of rotate(layouts, round)) {
    await setUp(layout);
    runs.get(layout)!.push(await drain(layout));
  }
}
await db.query('DROP TABLE IF EXISTS hot, finished');
await db.end();
await dropBenchDatabase(base, 'finished_table');

const rows = layouts.map((layout) => {
  const of = (k: keyof Figures) => median(runs.get(layout)!.map((f) => f[k]));
  return {
    layout,
    'jobs/s': Math.round(of('jobsPerS')),
    'claim µs': +of('claimCpuUs').toFixed(1),
    'completion µs': +of('completeCpuUs').toFixed(1),
    'claim WAL B': Math.round(of('claimWal')),
    'completion WAL B': Math.round(of('completeWal')),
  };
});
console.log(`${JOBS} jobs, ${BATCH} a statement, ${ROUNDS} rounds, medians (backend CPU and WAL per job)`);
console.table(rows);

// Where a worker drain's cost goes: the real worker runtime (startWorker, concurrency 16) drains
// JOBS no-op jobs, as in `npm run bench`, and this prints per job: server CPU (every backend of
// the bench database, from /proc), this process's CPU, commits, and the calls the worker made
// into the core with their mean sizes (claims, completions, start checks, renewals).
//   node bin/run-ts.js bench/drain-stats.ts [ROUNDS] [JOBS]   (BENCH_WORKER_ROOT: see below)
// On a shared, busy machine wall time moves a lot; the per-job CPU and call counts do not.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { createPool } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';
import type * as WorkModule from '../queue/services/work.ts';
import type * as WorkerModule from '../worker/index.ts';
import { benchDbName, CONCURRENCY, Countdown, freshBenchDatabase, processCpuUs, untilZero } from './peers/harness.ts';

// BENCH_WORKER_ROOT: another revision's tree (e.g. `git archive main worker queue`), to A/B the runtime.
const root = pathToFileURL(`${path.resolve(process.env.BENCH_WORKER_ROOT ?? path.join(import.meta.dirname, '..'))}/`);
const { WorkService } = (await import(new URL('queue/services/work.ts', root).href)) as typeof WorkModule;
const { startWorker } = (await import(new URL('worker/index.ts', root).href)) as typeof WorkerModule;
const ROUNDS = Number(process.argv[2] ?? 1);
const JOBS = Number(process.argv[3] ?? 20_000);
const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const calls = new Map<string, { n: number; items: number }>();
type Method = 'claim' | 'complete' | 'fail' | 'startGate' | 'heartbeat' | 'claimLimited' | 'release' | 'nextRunAt';
/** Counts calls of `method` (if this revision has it) as `name`'s. */
function count(name: Method, size: (args: unknown[]) => number, method: string = name): void {
  const proto = WorkService.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const orig = proto[method];
  if (!orig) return;
  proto[method] = function (this: unknown, ...args: unknown[]) {
    const c = calls.get(name) ?? { n: 0, items: 0 };
    c.n++;
    c.items += size(args);
    calls.set(name, c);
    return orig.apply(this, args);
  };
}
count('claim', (a) => (a[0] as { limit: number }).limit);
// The worker's own claims (revisions since it has them).
count('claim', (a) => (a[0] as { limit: number }).limit, 'claimToRun');
count('complete', (a) => (a[1] as unknown[]).length);
count('complete', (a) => (a[1] as unknown[]).length, 'completeJson');
count('fail', (a) => (a[1] as unknown[]).length);
count('heartbeat', (a) => (a[1] as unknown[]).length);
count('release', (a) => (a[1] as unknown[]).length);
count('startGate', () => 0);
count('claimLimited', () => 0);
count('nextRunAt', () => 0);

/** Worker settings from the environment, as bench/herald.ts takes them. */
function tuning(): { claimAheadMs?: number } {
  const ms = process.env.BENCH_HERALD_CLAIM_AHEAD_MS;
  return ms ? { claimAheadMs: Number(ms) } : {};
}

async function round(): Promise<Record<string, number>> {
  const name = benchDbName('drain_stats');
  const url = await freshBenchDatabase(base, 'drain_stats');
  // Reads pg_stat_activity and pg_stat_database for this database while the worker runs.
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await migrate(url);
  const pool = createPool(url, { max: 1, applicationName: 'herald:bench-producer' });
  const queue = new Queue(pool);
  for (let done = 0; done < JOBS; done += 5_000) {
    await queue.enqueueMany(Array.from({ length: Math.min(5_000, JOBS - done) }, () => ({ kind: 'noop', payload: {} })));
  }
  await pool.query('ANALYZE herald.jobs');
  const own = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  // Backends come and go with the worker's pool: collect them while it runs, read their CPU at the end.
  const pids = new Set<number>();
  const collect = async () => {
    const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> $2', [name, own]);
    for (const r of rows) pids.add(r.pid);
  };
  const commits = async () => Number((await admin.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1', [name])).rows[0].n);
  calls.clear();
  const c0 = await commits();
  const handled = new Countdown(JOBS);
  const node0 = process.cpuUsage();
  const t0 = performance.now();
  const w = await startWorker({ databaseUrl: url, concurrency: CONCURRENCY, tasks: { noop: async () => handled.tick() }, ...tuning() });
  const sampler = setInterval(() => void collect(), 20);
  await handled.promise;
  const left = `SELECT count(*)::int AS n FROM herald.jobs WHERE status <> 'succeeded'`;
  await untilZero(async () => (await pool.query<{ n: number }>(left)).rows[0].n);
  const ms = performance.now() - t0;
  clearInterval(sampler);
  await collect();
  const server = [...pids].reduce((s, p) => s + (processCpuUs(p) || 0), 0);
  const node = process.cpuUsage(node0);
  await w.stop();
  // The bench's own polling commits count too (a few hundred); the untilZero loop adds some.
  const c1 = await commits();
  await pool.end();
  await admin.end();
  const out: Record<string, number> = {
    'jobs/s': Math.round(JOBS / (ms / 1000)),
    'server µs/job': +(server / JOBS).toFixed(1),
    'node µs/job': +((node.user + node.system) / JOBS).toFixed(1),
    'commits/job': +((c1 - c0) / JOBS).toFixed(3),
  };
  for (const [k, v] of calls) {
    out[`${k} calls`] = v.n;
    if (v.items) out[`${k} mean size`] = +(v.items / v.n).toFixed(1);
  }
  return out;
}

for (let i = 0; i < ROUNDS; i++) console.log(JSON.stringify(await round()));

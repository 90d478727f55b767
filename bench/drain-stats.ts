// Where a worker drain's cost goes, per drained job: the real worker runtime (startWorker,
// concurrency 16, in this process as in `npm run bench`) drains JOBS no-op jobs, and this prints
// the machine's CPU split into the worker process, each backend's CPU by statement (claim,
// outcome, renewals, barriers, start checks...), PostgreSQL's background processes, and the rest
// of the machine; statements, round trips and commits per job; how many jobs the worker's first
// FIRST_KEPT claims took (how fast it reaches full claims); and, with --cpu-prof, the worker's
// top frames by self time.
//   node bin/run-ts.js bench/drain-stats.ts [ROUNDS] [JOBS] [--cpu-prof [--cpu-prof-file F]] [--json]
// (--json: one line per round, with its statements and the load average, instead of the medians)
// CPU times are read from /proc (PostgreSQL must run on this machine): on a shared, busy machine
// wall time moves a lot, the CPU per job and the counts do not. Only "rest of the machine" is the
// other work on it. --cpu-prof profiles every round (the profiler costs the worker a few µs a
// job: compare CPU figures from rounds without it). BENCH_WORKER_ROOT: see below.
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createPool } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';
import { Queue } from '../queue/queue.ts';
import type * as WorkerModule from '../worker/index.ts';
import { CpuProfile, type Frame } from './cpu-profile.ts';
import { backendPid, benchDbName, CONCURRENCY, Countdown, freshBenchDatabase, median, untilZero } from './peers/harness.ts';
import { FIRST_KEPT, machineBusyUs, schedCpuUs, StatementCpu } from './statement-cpu.ts';

// BENCH_WORKER_ROOT: another revision's runtime (`git archive main package.json worker queue`,
// with this checkout's node_modules linked in, so that its statements go through the same driver
// and are counted), to A/B the worker; docs/benchmark.md has the commands.
const root = pathToFileURL(`${path.resolve(process.env.BENCH_WORKER_ROOT ?? path.join(import.meta.dirname, '..'))}/`);
const { startWorker } = (await import(new URL('worker/index.ts', root).href)) as typeof WorkerModule;

const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'cpu-prof': { type: 'boolean' }, 'cpu-prof-file': { type: 'string' }, json: { type: 'boolean' } },
});
const ROUNDS = Number(positionals[0] ?? 3);
const JOBS = Number(positionals[1] ?? 20_000);
const TOP = 5;
const base = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Worker settings from the environment, as bench/herald.ts takes them. */
function tuning(): { claimAheadMs?: number } {
  const ms = process.env.BENCH_HERALD_CLAIM_AHEAD_MS;
  return ms ? { claimAheadMs: Number(ms) } : {};
}

let producerPid = 0;
const statements = new StatementCpu((pid) => pid === producerPid);

interface Round {
  figures: Record<string, number>;
  /** Per statement: backend µs per job, statements per 1k jobs, rows each. */
  statements: Record<string, [us: number, per1k: number, rows: number]>;
  frames?: Frame[];
  modules?: Frame[];
}

/** CPU so far of PostgreSQL's own processes (WAL writer, checkpointer...): shared by every database. */
async function backgroundCpu(admin: pg.Client): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend'`);
  return new Map(rows.map((r) => [r.pid, schedCpuUs(r.pid)]));
}

async function round(k: number): Promise<Round> {
  const name = benchDbName('drain_stats');
  const url = await freshBenchDatabase(base, 'drain_stats');
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await migrate(url);
  const pool = createPool(url, { max: 1, applicationName: 'herald:bench-producer' });
  const queue = new Queue(pool);
  for (let done = 0; done < JOBS; done += 5_000) {
    await queue.enqueueMany(Array.from({ length: Math.min(5_000, JOBS - done) }, () => ({ kind: 'noop', payload: {} })));
  }
  await pool.query('ANALYZE herald.jobs');
  producerPid = await backendPid(pool);
  const commits = async () => Number((await admin.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1', [name])).rows[0].n);
  const c0 = await commits();
  const bg0 = await backgroundCpu(admin);
  const profile = flags['cpu-prof'] ? new CpuProfile() : undefined;
  await profile?.start();
  const handled = new Countdown(JOBS);
  statements.start();
  const machine0 = machineBusyUs();
  const node0 = process.cpuUsage();
  const t0 = performance.now();
  const w = await startWorker({ databaseUrl: url, concurrency: CONCURRENCY, tasks: { noop: async () => handled.tick() }, ...tuning() });
  await handled.promise;
  const left = `SELECT count(*)::int AS n FROM herald.jobs WHERE status <> 'succeeded'`;
  await untilZero(async () => (await pool.query<{ n: number }>(left)).rows[0].n);
  const ms = performance.now() - t0;
  const node = process.cpuUsage(node0);
  const machine = machineBusyUs() - machine0;
  statements.stop();
  // Every backend the worker used, to its CPU now: what its statements did not account for is
  // the time between them (the listener's notifications, connection start).
  let backends = 0;
  for (const [pid, first] of statements.backends) backends += schedCpuUs(pid) - first;
  const prof = await profile?.stop(
    flags['cpu-prof-file'] ? flags['cpu-prof-file'].replace(/(\.cpuprofile)?$/, `.${k}.cpuprofile`) : undefined,
    schedCpuUs.name,
  );
  let background = 0;
  for (const [pid, cpu] of await backgroundCpu(admin)) background += bg0.has(pid) ? cpu - bg0.get(pid)! : 0;
  await w.stop();
  // The bench's polling commits count too (a few, after the last handler).
  const c1 = await commits();
  await pool.end();
  await admin.end();

  const perJob = (us: number) => +(us / JOBS).toFixed(1);
  const worker = node.user + node.system - statements.selfUs;
  let inStatements = 0;
  let n = 0;
  let trips = 0;
  const byStatement: Round['statements'] = {};
  for (const [label, t] of statements.tallies) {
    inStatements += t.cpuUs;
    n += t.n;
    trips += t.trips;
    byStatement[label] = [perJob(t.cpuUs), +((t.n / JOBS) * 1000).toFixed(2), t.n ? Math.round(t.rows / t.n) : 0];
  }
  return {
    figures: {
      'jobs/s': Math.round(JOBS / (ms / 1000)),
      'machine µs/job': perJob(machine),
      'worker process µs/job': perJob(worker),
      'bench itself µs/job': perJob(statements.selfUs),
      'backends µs/job': perJob(backends),
      'statements µs/job': perJob(inStatements),
      'between statements µs/job': perJob(backends - inStatements),
      'PostgreSQL background µs/job': perJob(background),
      'rest of the machine µs/job': perJob(machine - node.user - node.system - backends - background),
      'statements per 1k jobs': +((n / JOBS) * 1000).toFixed(2),
      'round trips per 1k jobs': +((trips / JOBS) * 1000).toFixed(2),
      'commits per 1k jobs': +(((c1 - c0) / JOBS) * 1000).toFixed(2),
      // A worker that starts against a backlog claims its free slots first, then ahead at its pace.
      [`jobs in its first ${FIRST_KEPT} claims`]: (statements.tallies.get('claim_run')?.first ?? []).reduce((x, y) => x + y, 0),
      ...(prof ? { 'profiled busy µs/job': perJob(prof.busyUs) } : {}),
    },
    statements: byStatement,
    frames: prof?.frames,
    modules: prof?.modules,
  };
}

const rounds: Round[] = [];
const load0 = os.loadavg();
for (let i = 0; i < ROUNDS; i++) {
  const r = await round(i);
  rounds.push(r);
  if (flags.json) console.log(JSON.stringify({ ...r.figures, load: os.loadavg()[0], statements: r.statements }));
}
const load1 = os.loadavg();
// --json: the rounds' lines only.
if (flags.json) process.exit(0);

// Medians over the rounds, key by key, in the first round's order (a statement seen in only some
// rounds counts 0 in the others).
const keys = [...new Set(rounds.flatMap((r) => Object.keys(r.figures)))];
const med = Object.fromEntries(keys.map((key) => [key, median(rounds.map((r) => r.figures[key] ?? 0))]));
const loads = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
console.log(`drain-stats: ${JOBS} jobs, ${ROUNDS} round(s), medians; load average ${loads(load0)} before, ${loads(load1)} after`);
for (const key of keys) {
  console.log(`${key.padEnd(32)} ${med[key]}`);
  if (key === 'statements µs/job') printStatements();
}

/** One line per statement, dearest first: medians of its backend µs per job, count per 1k jobs, rows each. */
function printStatements(): void {
  const at = (label: string, i: number) => median(rounds.map((r) => r.statements[label]?.[i] ?? 0));
  const labels = [...new Set(rounds.flatMap((r) => Object.keys(r.statements)))].filter((l) => at(l, 1) > 0);
  console.log(`  ${'statement'.padEnd(30)} ${'µs/job'.padStart(7)} ${'per 1k jobs'.padStart(12)} ${'rows each'.padStart(10)}`);
  for (const label of labels.sort((a, b) => at(b, 0) - at(a, 0) || at(b, 1) - at(a, 1))) {
    console.log(`  ${label.padEnd(30)} ${String(at(label, 0)).padStart(7)} ${String(at(label, 1)).padStart(12)} ${String(at(label, 2)).padStart(10)}`);
  }
}

/** Each frame's self time, µs per job, median over the profiled rounds (frames by their median). */
function topFrames(which: 'frames' | 'modules'): void {
  const all = new Map<string, number[]>();
  for (const r of rounds) for (const f of r[which] ?? []) all.set(f.frame, [...(all.get(f.frame) ?? []), f.selfUs / JOBS]);
  const top = [...all]
    .map(([frame, us]) => ({ frame, us: median([...us, ...Array<number>(rounds.length - us.length).fill(0)]) }))
    .sort((a, b) => b.us - a.us)
    .slice(0, TOP);
  console.log(`worker profile, top ${TOP} ${which} by self time (µs/job):`);
  for (const f of top) console.log(`  ${f.us.toFixed(2).padStart(6)}  ${f.frame}`);
}
if (flags['cpu-prof']) {
  topFrames('frames');
  topFrames('modules');
}

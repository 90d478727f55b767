// `npm run bench [-- --json] [-- --rounds N] [-- --only herald,sql] [-- --search]`: Herald against
// graphile-worker (default and batched), pg-boss and a bare-SQL floor, on the same PostgreSQL,
// in one run. Each runner gets a fresh database of its own (herald_bench_<name>).
//
// Sizes: BENCH_JOBS (20000), BENCH_LATENCY_COUNT (300), BENCH_LATENCY_INTERVAL_MS (10).
// With --rounds N each figure is the median of N runs (the order rotates every round).
import os from 'node:os';
import pg from 'pg';
import { openDatabase, withDatabase } from '../queue/database.ts';
import herald from './herald.ts';
import { searchBench } from './search.ts';
import { peers } from './peers/index.ts';
import { percentiles, type Percentiles } from './peers/stats.ts';
import type { PeerRunner } from './peers/types.ts';

/** The runners in --json order; graphile_batched has no latency entry (the same LISTEN path as graphile). */
const DRAIN = ['herald', 'graphile', 'graphile_batched', 'pgboss', 'sql'];
const LATENCY = ['herald', 'graphile', 'pgboss', 'sql'];

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`);
  return n;
}

function parseArgs(argv: string[]) {
  const args = { json: false, search: false, rounds: 1, only: undefined as string[] | undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--json') args.json = true;
    else if (a === '--search') args.search = true;
    else if (a === '--rounds') args.rounds = Number(argv[++i]);
    else if (a === '--only') args.only = argv[++i].split(',');
    else throw new Error(`unknown argument ${a}; usage: bench [--json] [--rounds N] [--only herald,sql,...] [--search]`);
  }
  if (!Number.isInteger(args.rounds) || args.rounds < 1) throw new Error('--rounds must be a positive integer');
  return args;
}


async function freshDatabase(adminUrl: string, name: string): Promise<string> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${c.escapeIdentifier(name)}`);
  } finally {
    await c.end();
  }
  return withDatabase(adminUrl, name);
}

async function serverVersion(url: string): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
  } finally {
    await c.end();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rotate = <T>(xs: T[], k: number) => xs.map((_, i) => xs[(i + k) % xs.length]);

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const jobs = envInt('BENCH_JOBS', 20_000);
  const count = envInt('BENCH_LATENCY_COUNT', 300);
  const intervalMs = envInt('BENCH_LATENCY_INTERVAL_MS', 10);
  const say = (line: string) => process.stderr.write(`${line}\n`);

  const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: process.env.HERALD_DATA_DIR || '.herald' });
  const adminUrl = withDatabase(db.url, 'postgres');
  if (args.search) {
    try {
      const result = await searchBench(await freshDatabase(adminUrl, 'herald_bench_search'), say);
      process.stdout.write(`${JSON.stringify({ search: result }, null, args.json ? undefined : 2)}\n`);
    } finally {
      await db.close();
    }
    return;
  }
  const runners: PeerRunner[] = [herald, ...peers].filter((r) => !args.only || args.only.includes(r.name));
  const drains = new Map<string, number[]>();
  const latencies = new Map<string, Percentiles[]>();
  try {
    const version = await serverVersion(adminUrl);
    say(`Herald bench: PostgreSQL ${version} (${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded'}), ${os.cpus().length} cores, ` +
      `drain ${jobs} no-op jobs, latency ${count} jobs ${intervalMs} ms apart, concurrency 16, ${args.rounds} round(s)`);
    for (let round = 0; round < args.rounds; round++) {
      for (const r of rotate(runners.filter((r) => DRAIN.includes(r.name)), round)) {
        const url = await freshDatabase(adminUrl, `herald_bench_${r.name}`);
        const rate = await r.drain(url, jobs);
        drains.set(r.name, [...(drains.get(r.name) ?? []), rate]);
        say(`  round ${round + 1}: ${r.name} drain ${Math.round(rate)} jobs/s`);
      }
      for (const r of rotate(runners.filter((r) => LATENCY.includes(r.name)), round)) {
        const url = await freshDatabase(adminUrl, `herald_bench_${r.name}`);
        const p = percentiles(await r.latency(url, count, intervalMs));
        latencies.set(r.name, [...(latencies.get(r.name) ?? []), p]);
        say(`  round ${round + 1}: ${r.name} latency p50 ${p.p50.toFixed(1)} / p95 ${p.p95.toFixed(1)} / p99 ${p.p99.toFixed(1)} ms`);
      }
    }
  } finally {
    await db.close();
  }

  const drain = Object.fromEntries([...drains].map(([k, v]) => [k, Math.round(median(v))]));
  const round1 = (x: number) => Math.round(x * 100) / 100;
  const latency = Object.fromEntries(
    [...latencies].map(([k, v]) => [k, { p50: round1(median(v.map((p) => p.p50))), p95: round1(median(v.map((p) => p.p95))), p99: round1(median(v.map((p) => p.p99))) }]),
  );
  const ratio = (a: number | undefined, b: number | undefined) => (a && b ? `${(a / b).toFixed(2)}×` : '');
  const pad = (s: string, n: number) => s.padEnd(n);
  const lpad = (s: string, n: number) => s.padStart(n);

  const out: string[] = [''];
  out.push(`${pad('drain', 18)}${lpad('jobs/s', 10)}${lpad('herald/peer', 14)}`);
  for (const name of DRAIN.filter((n) => n in drain)) {
    out.push(`${pad(`  ${name}`, 18)}${lpad(drain[name].toLocaleString('en-US'), 10)}${lpad(name === 'herald' ? '' : ratio(drain.herald, drain[name]), 14)}`);
  }
  out.push('');
  out.push(`${pad('latency (ms)', 18)}${lpad('p50', 8)}${lpad('p95', 8)}${lpad('p99', 8)}${lpad('herald/peer p50', 18)}${lpad('p99', 8)}`);
  for (const name of LATENCY.filter((n) => n in latency)) {
    const l = latency[name];
    const vs = name === 'herald' ? ['', ''] : [ratio(latency.herald?.p50, l.p50), ratio(latency.herald?.p99, l.p99)];
    out.push(`${pad(`  ${name}`, 18)}${lpad(l.p50.toFixed(1), 8)}${lpad(l.p95.toFixed(1), 8)}${lpad(l.p99.toFixed(1), 8)}${lpad(vs[0], 18)}${lpad(vs[1], 8)}`);
  }
  const silenced = runners.map((r) => [r.name, r.silencedErrors?.() ?? 0] as const).filter(([, n]) => n > 0);
  for (const [name, n] of silenced) out.push(`(${name} reported ${n} error/warning events during its runs)`);
  process.stdout.write(`${out.join('\n')}\n`);
  if (args.json) process.stdout.write(`${JSON.stringify({ drain, latency })}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});

// `npm run bench [-- --json] [-- --rounds N] [-- --only herald,sql]`: Herald against
// graphile-worker (default and batched), pg-boss and a bare-SQL floor, on the same PostgreSQL,
// in one run. `--depth` instead measures Herald's claim at 1k, 100k and 1M queued (depth.ts);
// `--http` Herald's single POST against a bare Fastify INSERT route (http.ts); `--search` search
// latency at 1M jobs and a payload GIN index's enqueue cost (search.ts). Each runner gets a
// fresh database of its own (herald_bench_<name>; BENCH_DB_PREFIX
// changes the prefix).
//
// Sizes: BENCH_JOBS (20000), BENCH_LATENCY_COUNT (300), BENCH_LATENCY_INTERVAL_MS (10).
// `npm run bench -- --flows`: workflow creation and child start latency (flows.ts).
// `npm run bench -- --sse`: POST → every SSE client at 1, 10, 100 and 1,000 clients (server-sse-latency.ts).
// With --rounds N each figure is the median of N runs (the order rotates every round).
import os from 'node:os';
import pg from 'pg';
import { openDatabase, withDatabase } from '../queue/database.ts';
import herald from './herald.ts';
import { searchBench } from './search.ts';
import { flowsBench } from './flows.ts';
import { peers } from './peers/index.ts';
import { benchDbName } from './peers/harness.ts';
import { DEPTHS, claimCost } from './depth.ts';
import { httpBench, type HttpResult } from './http.ts';
import { migrate } from '../queue/migrate.ts';
import { percentiles, type Percentiles } from './peers/stats.ts';
import type { PeerRunner } from './peers/types.ts';
import { sseLatency, sseTable } from './server-sse-latency.ts';

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
  const args = { json: false, depth: false, http: false, sse: false, search: false, flows: false, rounds: 1, only: undefined as string[] | undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--json') args.json = true;
    else if (a === '--depth') args.depth = true;
    else if (a === '--http') args.http = true;
    else if (a === '--search') args.search = true;
    else if (a === '--flows') args.flows = true;
    else if (a === '--rounds') args.rounds = Number(argv[++i]);
    else if (a === '--only') args.only = argv[++i].split(',');
    else if (a === '--sse') args.sse = true;
    else throw new Error(`unknown argument ${a}; usage: bench [--json] [--depth | --http | --sse | --search | --flows | --rounds N --only herald,sql,...]`);
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
  if (args.sse) return sse(args.json);
  const jobs = envInt('BENCH_JOBS', 20_000);
  const count = envInt('BENCH_LATENCY_COUNT', 300);
  const intervalMs = envInt('BENCH_LATENCY_INTERVAL_MS', 10);
  const say = (line: string) => process.stderr.write(`${line}\n`);

  const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: process.env.HERALD_DATA_DIR || '.herald' });
  const adminUrl = withDatabase(db.url, 'postgres');
  if (args.depth || args.http || args.search || args.flows) {
    try {
      if (args.depth) await depthBench(adminUrl, args.json, say);
      else if (args.http) await compareHttp(adminUrl, args.json, say);
      else if (args.flows) {
        say(`Herald flows bench: PostgreSQL ${await serverVersion(adminUrl)}`);
        const result = await flowsBench(await freshDatabase(adminUrl, benchDbName('flows')), say);
        process.stdout.write(`${JSON.stringify({ flows: result }, null, args.json ? undefined : 2)}\n`);
      } else {
        const result = await searchBench(await freshDatabase(adminUrl, benchDbName('search')), say);
        process.stdout.write(`${JSON.stringify({ search: result }, null, args.json ? undefined : 2)}\n`);
      }
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
        const url = await freshDatabase(adminUrl, benchDbName(r.name));
        const rate = await r.drain(url, jobs);
        drains.set(r.name, [...(drains.get(r.name) ?? []), rate]);
        say(`  round ${round + 1}: ${r.name} drain ${Math.round(rate)} jobs/s`);
      }
      for (const r of rotate(runners.filter((r) => LATENCY.includes(r.name)), round)) {
        const url = await freshDatabase(adminUrl, benchDbName(r.name));
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

async function depthBench(adminUrl: string, json: boolean, say: (line: string) => void): Promise<void> {
  say(`Herald depth bench: PostgreSQL ${await serverVersion(adminUrl)}, one claim of 16 + its completion, N queued and N finished`);
  const depth: Record<string, number> = {};
  for (const n of DEPTHS) {
    const url = await freshDatabase(adminUrl, benchDbName(`depth_${n}`));
    depth[n] = Math.round((await claimCost(url, n, say)) * 100) / 100;
    say(`  depth ${n}: ${depth[n]} ms`);
    await dropDatabase(adminUrl, benchDbName(`depth_${n}`));
  }
  const base = depth[DEPTHS[0]];
  process.stdout.write(`\n${'queued (+ as many finished)'.padEnd(30)}${'ms'.padStart(8)}${'× 1k'.padStart(8)}\n`);
  for (const n of DEPTHS) {
    process.stdout.write(`${`  ${n.toLocaleString('en-US')}`.padEnd(30)}${depth[n].toFixed(2).padStart(8)}${`${(depth[n] / base).toFixed(2)}×`.padStart(8)}\n`);
  }
  if (json) process.stdout.write(`${JSON.stringify({ depth })}\n`);
}

async function compareHttp(adminUrl: string, json: boolean, say: (line: string) => void): Promise<void> {
  const seconds = envInt('BENCH_HTTP_SECONDS', 10);
  say(`Herald HTTP bench: PostgreSQL ${await serverVersion(adminUrl)}, single-job POSTs, 32 connections, ${seconds} s each`);
  const heraldUrl = await freshDatabase(adminUrl, benchDbName('http_herald'));
  await migrate(heraldUrl);
  const bareUrl = await freshDatabase(adminUrl, benchDbName('http_bare'));
  const r = await httpBench(heraldUrl, bareUrl, seconds);
  const line = (name: string, x: HttpResult) =>
    `${`  ${name}`.padEnd(18)}${x.requestsPerSecond.toLocaleString('en-US').padStart(10)}${x.p50.toFixed(1).padStart(8)}${x.p99.toFixed(1).padStart(8)}${String(x.non2xx).padStart(8)}`;
  process.stdout.write(`\n${'POST, 1 job'.padEnd(18)}${'req/s'.padStart(10)}${'p50 ms'.padStart(8)}${'p99 ms'.padStart(8)}${'non-2xx'.padStart(8)}\n`);
  process.stdout.write(`${line('herald', r.herald)}\n${line('bare INSERT', r.bare)}\n`);
  process.stdout.write(`herald / bare: ${(r.herald.requestsPerSecond / r.bare.requestsPerSecond).toFixed(2)}×\n`);
  if (json) process.stdout.write(`${JSON.stringify({ http: { herald: r.herald.requestsPerSecond, bare: r.bare.requestsPerSecond } })}\n`);
  await dropDatabase(adminUrl, benchDbName('http_herald'));
  await dropDatabase(adminUrl, benchDbName('http_bare'));
}

async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await c.end();
  }
}

// `--sse`: POST → every SSE client, by client count (see server-sse-latency.ts). Sizes:
// BENCH_SSE_COUNT (60) jobs, BENCH_SSE_INTERVAL_MS (100) apart, per client count.
async function sse(json: boolean) {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  say(`Herald SSE bench: ${os.cpus().length} cores, clients 1, 10, 100, 1000`);
  const result = await sseLatency({
    clients: [1, 10, 100, 1000],
    count: envInt('BENCH_SSE_COUNT', 60),
    intervalMs: envInt('BENCH_SSE_INTERVAL_MS', 100),
    say,
  });
  process.stdout.write(`\n${sseTable(result)}\n`);
  if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});

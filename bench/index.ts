// `npm run bench [-- --json] [-- --rounds N] [-- --only herald,sql] [-- --commit sync|async|both]`:
// Herald against graphile-worker (default and batched), pg-boss, BullMQ on PostgreSQL and a
// bare-SQL floor, on the same PostgreSQL, in one run. Every runner runs with the same commit
// durability: its bench database's synchronous_commit, on (the headline) and off (a second
// column). Each of `--rounds` (3) runs every runner once per setting, the order rotating. `--depth` instead measures Herald's claim at 1k, 100k and 1M queued (depth.ts);
// `--http` Herald's single POST against a bare Fastify INSERT route (http.ts); `--search` search
// latency at 1M jobs and a payload GIN index's enqueue cost (search.ts). Each runner gets a
// fresh database of its own (herald_bench_<name>; BENCH_DB_PREFIX
// changes the prefix).
//
// Sizes: BENCH_JOBS (20000), BENCH_LATENCY_COUNT (300), BENCH_LATENCY_INTERVAL_MS (10).
// `npm run bench -- --flows`: workflow creation and child start latency (flows.ts).
// `npm run bench -- --sse`: POST → every SSE client at 1, 10, 100 and 1,000 clients (server-sse-latency.ts).
// `npm run bench -- --counts`: the counting replies (GET /api/queues, a PATCH reply, /metrics) and
// listings that match nothing, at 1M jobs in 100 queues (counts.ts).
// `--producers`: 64 sessions inserting single jobs over SQL, herald.jobs against a table of the
// same shape with no trigger (producers.ts).
// `--durable`: steps, sleeps and signals against DBOS Transact (durable.ts).
// `--replicas`: 1, 2 and 4 servers of 250 SSE clients, on the primary and on a standby (replicas.ts).
// `--board [--trace]`: the Overview's long tasks in Chromium at 4,000 events/s (board-load.ts).
import os from 'node:os';
import pg from 'pg';
import { openDatabase, withDatabase } from '../queue/database.ts';
import herald from './herald.ts';
import { searchBench } from './search.ts';
import { countsBench } from './counts.ts';
import { flowsBench } from './flows.ts';
import { peers } from './peers/index.ts';
import { benchDbName, median, rotate } from './peers/harness.ts';
import { DEPTHS, claimCost } from './depth.ts';
import { httpBench, type HttpResult } from './http.ts';
import { migrate } from '../queue/migrate.ts';
import { percentiles, type Percentiles } from './peers/stats.ts';
import type { PeerRunner } from './peers/types.ts';
import { sseLatency, sseTable } from './server-sse-latency.ts';
import { durableBench, durableTable } from './durable.ts';
import { replicasBench, replicasTable } from './replicas.ts';
import { producerRate, setupProducers } from './producers.ts';
import { boardLoadBench, boardLoadTable } from './board-load.ts';

/** The runners in --json order, in both tests. */
const RUNNERS = ['herald', 'graphile', 'graphile_batched', 'pgboss', 'bullmq', 'sql'];
const COMMITS = ['sync', 'async'] as const;
type Commit = (typeof COMMITS)[number];

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`);
  return n;
}

function parseArgs(argv: string[]) {
  const args = {
    json: false, depth: false, http: false, sse: false, search: false, producers: false, flows: false, counts: false, durable: false, replicas: false, board: false, trace: false,
    rounds: 3, only: undefined as string[] | undefined, commits: [...COMMITS] as Commit[],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--json') args.json = true;
    else if (a === '--depth') args.depth = true;
    else if (a === '--http') args.http = true;
    else if (a === '--search') args.search = true;
    else if (a === '--flows') args.flows = true;
    else if (a === '--counts') args.counts = true;
    else if (a === '--durable') args.durable = true;
    else if (a === '--replicas') args.replicas = true;
    else if (a === '--board') args.board = true;
    else if (a === '--trace') args.trace = true;
    else if (a === '--rounds') args.rounds = Number(argv[++i]);
    else if (a === '--only') args.only = argv[++i].split(',');
    else if (a === '--sse') args.sse = true;
    else if (a === '--producers') args.producers = true;
    else if (a === '--commit') {
      const c = argv[++i];
      args.commits = c === 'both' ? [...COMMITS] : COMMITS.filter((x) => x === c);
      if (!args.commits.length) throw new Error('--commit must be sync, async or both');
    } else throw new Error(`unknown argument ${a}; usage: bench [--json] [--depth | --http | --sse | --search | --producers | --flows | --counts | --durable | --replicas | --board [--trace] | --rounds N --only herald,sql,... --commit sync|async|both]`);
  }
  if (!Number.isInteger(args.rounds) || args.rounds < 1) throw new Error('--rounds must be a positive integer');
  return args;
}


/** A new database; `async` sets its sessions' synchronous_commit off, whoever opens them. */
async function freshDatabase(adminUrl: string, name: string, commit: Commit = 'sync'): Promise<string> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${c.escapeIdentifier(name)}`);
    if (commit === 'async') await c.query(`ALTER DATABASE ${c.escapeIdentifier(name)} SET synchronous_commit = off`);
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


async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.sse) return sse(args.json);
  if (args.replicas) return replicas(args.json);
  if (args.board) return board(args.json, args.trace);
  const jobs = envInt('BENCH_JOBS', 20_000);
  const count = envInt('BENCH_LATENCY_COUNT', 300);
  const intervalMs = envInt('BENCH_LATENCY_INTERVAL_MS', 10);
  const say = (line: string) => process.stderr.write(`${line}\n`);

  const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: process.env.HERALD_DATA_DIR || '.herald' });
  const adminUrl = withDatabase(db.url, 'postgres');
  if (args.depth || args.http || args.search || args.producers || args.flows || args.counts || args.durable) {
    try {
      if (args.depth) await depthBench(adminUrl, args.json, say);
      else if (args.durable) await durable(adminUrl, args.rounds, args.json, say);
      else if (args.producers) await producersBench(adminUrl, args.rounds, args.json, say);
      else if (args.http) await compareHttp(adminUrl, args.json, say);
      else if (args.flows) {
        say(`Herald flows bench: PostgreSQL ${await serverVersion(adminUrl)}`);
        const result = await flowsBench(await freshDatabase(adminUrl, benchDbName('flows')), say);
        process.stdout.write(`${JSON.stringify({ flows: result }, null, args.json ? undefined : 2)}\n`);
      } else if (args.counts) {
        say(`Herald counts bench: PostgreSQL ${await serverVersion(adminUrl)}`);
        const result = await countsBench(await freshDatabase(adminUrl, benchDbName('counts')), say);
        process.stdout.write(`${JSON.stringify({ counts: result }, null, args.json ? undefined : 2)}\n`);
        await dropDatabase(adminUrl, benchDbName('counts'));
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
  const add = <T>(m: Map<string, T[]>, key: string, x: T) => m.set(key, [...(m.get(key) ?? []), x]);
  try {
    const version = await serverVersion(adminUrl);
    say(`Herald bench: PostgreSQL ${version} (${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded'}), ${os.cpus().length} cores, ` +
      `drain ${jobs} no-op jobs, latency ${count} jobs ${intervalMs} ms apart, concurrency 16, ` +
      `synchronous_commit ${args.commits.map((c) => (c === 'sync' ? 'on' : 'off')).join(' and ')}, ${args.rounds} round(s)`);
    for (let round = 0; round < args.rounds; round++) {
      // Every round rotates the runners and flips which setting goes first.
      for (const commit of rotate(args.commits, round)) {
        for (const r of rotate(runners, round)) {
          const rate = await r.drain(await freshDatabase(adminUrl, benchDbName(r.name), commit), jobs);
          add(drains, `${commit}:${r.name}`, rate);
          say(`  round ${round + 1} ${commit}: ${r.name} drain ${Math.round(rate)} jobs/s`);
        }
        for (const r of rotate(runners, round)) {
          const p = percentiles(await r.latency(await freshDatabase(adminUrl, benchDbName(r.name), commit), count, intervalMs));
          add(latencies, `${commit}:${r.name}`, p);
          say(`  round ${round + 1} ${commit}: ${r.name} latency p50 ${p.p50.toFixed(1)} / p95 ${p.p95.toFixed(1)} / p99 ${p.p99.toFixed(1)} ms`);
        }
      }
    }
  } finally {
    await db.close();
  }
  const result = summarize(drains, latencies, args.commits);
  const silenced = runners.map((r) => [r.name, r.silencedErrors?.() ?? 0] as const).filter(([, n]) => n > 0);
  const notes = silenced.map(([name, n]) => `(${name} reported ${n} error/warning events during its runs)`);
  process.stdout.write(`${[...resultTable(result, args.commits), ...notes].join('\n')}\n`);
  // The headline keys (drain, latency) are the durable figures; *_async the same with synchronous_commit off.
  if (args.json) process.stdout.write(`${JSON.stringify({ ...result.sync, ...suffixed(result.async, '_async'), rounds: args.rounds })}\n`);
}

type Figures = { drain: Record<string, number>; latency: Record<string, Percentiles> };

function summarize(drains: Map<string, number[]>, latencies: Map<string, Percentiles[]>, commits: Commit[]): Partial<Record<Commit, Figures>> {
  const two = (x: number) => Math.round(x * 100) / 100;
  const of = <T>(m: Map<string, T[]>, commit: Commit) =>
    [...m].filter(([k]) => k.startsWith(`${commit}:`)).map(([k, v]) => [k.slice(commit.length + 1), v] as const);
  return Object.fromEntries(commits.map((commit) => [commit, {
    drain: Object.fromEntries(of(drains, commit).map(([k, v]) => [k, Math.round(median(v))])),
    latency: Object.fromEntries(of(latencies, commit).map(([k, v]) => [k, {
      p50: two(median(v.map((p) => p.p50))), p95: two(median(v.map((p) => p.p95))), p99: two(median(v.map((p) => p.p99))),
    }])),
  }]));
}

const suffixed = (f: Figures | undefined, suffix: string) => (f ? { [`drain${suffix}`]: f.drain, [`latency${suffix}`]: f.latency } : {});

/** Medians, synchronous commits first, then the same with synchronous_commit off. */
function resultTable(result: Partial<Record<Commit, Figures>>, commits: Commit[]): string[] {
  const ratio = (a: number | undefined, b: number | undefined) => (a && b ? `${(a / b).toFixed(2)}×` : '');
  const cell = (s: string, n: number) => s.padStart(n);
  const label = (c: Commit) => (c === 'sync' ? 'sync commit' : 'async commit');
  const out: string[] = [''];
  out.push(`${'drain jobs/s'.padEnd(18)}${commits.map((c) => `${cell(label(c), 14)}${cell('herald/peer', 13)}`).join('')}`);
  for (const name of RUNNERS.filter((n) => commits.some((c) => result[c]?.drain[n] !== undefined))) {
    const cols = commits.map((c) => {
      const d = result[c]!.drain;
      return `${cell(d[name]?.toLocaleString('en-US') ?? '', 14)}${cell(name === 'herald' ? '' : ratio(d.herald, d[name]), 13)}`;
    });
    out.push(`${`  ${name}`.padEnd(18)}${cols.join('')}`);
  }
  out.push('');
  out.push(`${'latency ms'.padEnd(18)}${commits.map((c) => `${cell(`${label(c)} p50`, 18)}${cell('p99', 7)}${cell('herald/peer p50', 17)}`).join('')}`);
  for (const name of RUNNERS.filter((n) => commits.some((c) => result[c]?.latency[n] !== undefined))) {
    const cols = commits.map((c) => {
      const l = result[c]!.latency;
      const p = l[name];
      return `${cell(p ? p.p50.toFixed(1) : '', 18)}${cell(p ? p.p99.toFixed(1) : '', 7)}${cell(name === 'herald' ? '' : ratio(l.herald?.p50, p?.p50), 17)}`;
    });
    out.push(`${`  ${name}`.padEnd(18)}${cols.join('')}`);
  }
  return out;
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

async function producersBench(adminUrl: string, rounds: number, json: boolean, say: (line: string) => void): Promise<void> {
  const sessions = envInt('BENCH_PRODUCERS', 64);
  const seconds = envInt('BENCH_PRODUCER_SECONDS', 5);
  say(`Herald producers bench: PostgreSQL ${await serverVersion(adminUrl)}, ${sessions} sessions inserting single jobs, ${seconds} s a run, ${rounds} round(s)`);
  const url = await freshDatabase(adminUrl, benchDbName('producers'));
  await setupProducers(url);
  const rates: Record<'herald' | 'plain', number[]> = { herald: [], plain: [] };
  for (let round = 0; round < rounds; round++) {
    for (const target of rotate(['herald', 'plain'] as const, round)) {
      const rate = await producerRate(url, target, sessions, seconds);
      rates[target].push(rate);
      say(`  round ${round + 1}: ${target} ${Math.round(rate)} inserts/s`);
    }
  }
  await dropDatabase(adminUrl, benchDbName('producers'));
  const herald = Math.round(median(rates.herald));
  const plain = Math.round(median(rates.plain));
  process.stdout.write(`\n${sessions} producers, inserts/s: herald.jobs ${herald.toLocaleString('en-US')}, no trigger ${plain.toLocaleString('en-US')}, ratio ${(herald / plain).toFixed(2)}×\n`);
  if (json) process.stdout.write(`${JSON.stringify({ producers: { herald, plain, sessions } })}\n`);
}

async function durable(adminUrl: string, rounds: number, json: boolean, say: (line: string) => void): Promise<void> {
  const sizes = {
    jobs: envInt('BENCH_DURABLE_JOBS', 200), steps: envInt('BENCH_DURABLE_STEPS', 100), serialJobs: envInt('BENCH_DURABLE_SERIAL_JOBS', 5),
    count: envInt('BENCH_DURABLE_COUNT', 100), replays: envInt('BENCH_DURABLE_REPLAYS', 10),
  };
  say(`Herald durable bench: PostgreSQL ${await serverVersion(adminUrl)}, ${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}, ${rounds} round(s)`);
  const result = await durableBench((what) => freshDatabase(adminUrl, benchDbName(what)), sizes, rounds, say);
  say(`  load at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  process.stdout.write(`\n${durableTable(result, sizes)}\n`);
  if (json) process.stdout.write(`${JSON.stringify({ durable: result, rounds })}\n`);
  for (const what of ['durable_herald', 'durable_dbos', 'durable_replay']) await dropDatabase(adminUrl, benchDbName(what));
}

// `--replicas`: a primary and a standby of its own (embedded), whatever DATABASE_URL says.
async function replicas(json: boolean) {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const sizes = {
    servers: (process.env.BENCH_REPLICA_SERVERS ?? '1,2,4').split(',').map(Number),
    clients: envInt('BENCH_REPLICA_CLIENTS', 250), rate: envInt('BENCH_REPLICA_RATE', 20), seconds: envInt('BENCH_REPLICA_SECONDS', 10),
  };
  say(`Herald replicas bench: ${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const rows = await replicasBench(sizes, say);
  say(`  load at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  process.stdout.write(`\n${replicasTable(rows, sizes)}\n`);
  if (json) process.stdout.write(`${JSON.stringify({ replicas: rows })}\n`);
}

// `--board`: the Overview's main thread under a steady load (its own database and server).
async function board(json: boolean, trace: boolean) {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const sizes = {
    eventsPerSecond: envInt('BENCH_BOARD_EVENTS_PER_S', 4000), seconds: envInt('BENCH_BOARD_SECONDS', 20), runs: envInt('BENCH_BOARD_RUNS', 3), trace,
    variants: process.env.BENCH_BOARD_VARIANTS?.split(',') ?? [], cpuSlowdown: envInt('BENCH_BOARD_CPU_SLOWDOWN', 1),
  };
  say(`Herald board bench: ${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const { label, runs } = await boardLoadBench(sizes, say);
  say(`  ${label}; load at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  process.stdout.write(`\n${boardLoadTable(runs, sizes)}\n`);
  if (json) process.stdout.write(`${JSON.stringify({ board: runs.map(({ hot: _hot, ...r }) => r) })}\n`);
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

// `npm run bench -- --replicas [--json]`: N `herald server` processes (BENCH_REPLICA_SERVERS, 1,2,4),
// each with BENCH_REPLICA_CLIENTS (250) SSE clients, reading the primary alone, then with
// HERALD_READ_URL naming a streaming standby of it, while a worker (16 slots, no-op task) drains
// BENCH_REPLICA_RATE (20) jobs a second enqueued for BENCH_REPLICA_SECONDS (10).
// The pair is test/support/standby.ts's: embedded PostgreSQL, a primary and a real standby.
// Per configuration:
//   - the primary's CPU spent by the servers' backends (application_name herald:server, ms of CPU
//     a second, from /proc), the whole primary's, and the standby's spent on the servers' reads;
//   - the event latency at the clients: a job's `enqueued` event at each client − just before
//     its enqueue (one per client and job);
//   - the servers' reads that went to the replica (herald_replica_reads_total).
import type pg from 'pg';
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import { startWorker } from '../worker/index.ts';
import { startStandbyPair, type StandbyPair } from '../test/support/standby.ts';
import { BackendCpu } from './backend-cpu.ts';
import { CONCURRENCY } from './peers/harness.ts';
import { percentiles, type Percentiles } from './peers/stats.ts';
import { spawnClients, type SseClients } from './server-sse-latency.ts';
import { spawnServer, type ServerProcess } from './server-support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TICK_MS = 100;
const SERVER = 'herald:server';
const SERVER_REPLICA = 'herald:server:replica';

export interface ReplicaSizes { servers: number[]; clients: number; rate: number; seconds: number }

export interface ReplicaRow {
  servers: number;
  replica: boolean;
  /** CPU ms a second on the primary: its backends serving the servers, and the whole instance. */
  primaryServerCpuMs: number;
  primaryCpuMs: number;
  /** CPU ms a second of the standby's backends serving the servers' reads. */
  standbyServerCpuMs: number;
  latencyMs: Percentiles;
  samples: number;
  missing: number;
  /** Share of the servers' routed reads that the replica served (null: no replica). */
  replicaShare: number | null;
}

/** herald_replica_reads_total of one server, by side. */
async function readsServed(url: string): Promise<{ replica: number; primary: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const count = (on: string) => Number(new RegExp(`^herald_replica_reads_total\\{on="${on}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { replica: count('replica'), primary: count('primary') };
}

async function oneConfig(pair: StandbyPair, pool: pg.Pool, queue: Queue, servers: number, replica: boolean, sizes: ReplicaSizes): Promise<ReplicaRow> {
  await pool.query('TRUNCATE herald.jobs, herald.job_events');
  await pair.caughtUp();
  const env = { HERALD_READ_URL: replica ? pair.standbyUrl : '' };
  const procs: ServerProcess[] = [];
  const clients: SseClients[] = [];
  const worker = await startWorker({ databaseUrl: pair.primaryUrl, concurrency: CONCURRENCY, tasks: { noop: async () => null } });
  try {
    for (let i = 0; i < servers; i++) procs.push(await spawnServer(pair.primaryUrl, env));
    for (const s of procs) clients.push(await spawnClients(s.url, sizes.clients, 1, true));
    const before = await Promise.all(procs.map((s) => readsServed(s.url)));
    const primaryCpu = new BackendCpu(pair.primaryUrl, [SERVER]);
    const standbyCpu = new BackendCpu(pair.standbyUrl, [SERVER_REPLICA]);
    await primaryCpu.start();
    await standbyCpu.start();
    const sentAt = new Map<string, bigint>();
    const perTick = Math.max(1, Math.round((sizes.rate * TICK_MS) / 1000));
    const ticks = Math.round((sizes.seconds * 1000) / TICK_MS);
    const t0 = performance.now();
    for (let t = 0; t < ticks; t++) {
      const wait = t0 + t * TICK_MS - performance.now();
      if (wait > 0) await sleep(wait);
      const at = process.hrtime.bigint();
      for (const { job } of await queue.enqueueMany(Array.from({ length: perTick }, () => ({ kind: 'noop' })))) sentAt.set(job.id, at);
    }
    const expected = sentAt.size;
    const arrivals: [string, string][] = [];
    const received = new Map<SseClients, number[]>();
    const deadline = Date.now() + 60_000;
    for (;;) {
      for (const c of clients) {
        const r = await c.report();
        arrivals.push(...r.arrivals);
        received.set(c, r.received);
      }
      if ([...received.values()].every((rs) => rs.every((n) => n >= expected)) || Date.now() > deadline) break;
      await sleep(100);
    }
    const primary = await primaryCpu.stop();
    const standby = await standbyCpu.stop();
    const after = await Promise.all(procs.map((s) => readsServed(s.url)));
    const samples = arrivals.filter(([id]) => sentAt.has(id)).map(([id, at]) => Number(BigInt(at) - sentAt.get(id)!) / 1e6);
    const missing = [...received.values()].flat().reduce((s, n) => s + Math.max(0, expected - n), 0);
    const onReplica = after.reduce((s, a, i) => s + a.replica - before[i].replica, 0);
    const onPrimary = after.reduce((s, a, i) => s + a.primary - before[i].primary, 0);
    const r1 = (x: number) => Math.round(x * 10) / 10;
    const p = percentiles(samples);
    return {
      servers, replica,
      primaryServerCpuMs: r1(primary.byPrefix[SERVER]), primaryCpuMs: r1(primary.instance), standbyServerCpuMs: r1(standby.byPrefix[SERVER_REPLICA]),
      latencyMs: { p50: r1(p.p50), p95: r1(p.p95), p99: r1(p.p99) }, samples: samples.length, missing,
      replicaShare: replica ? Math.round((onReplica / Math.max(1, onReplica + onPrimary)) * 1000) / 1000 : null,
    };
  } finally {
    for (const c of clients) await c.close();
    for (const s of procs) await s.stop();
    await worker.stop();
  }
}

export async function replicasBench(sizes: ReplicaSizes, say: (line: string) => void): Promise<ReplicaRow[]> {
  const pair = await startStandbyPair();
  const pool = createPool(pair.primaryUrl, { max: 2, applicationName: 'herald:bench-producer' });
  const queue = new Queue(pool);
  try {
    const rows: ReplicaRow[] = [];
    for (const servers of sizes.servers) {
      // Back to back, the same conditions: the primary alone, then with the replica.
      for (const replica of [false, true]) {
        const row = await oneConfig(pair, pool, queue, servers, replica, sizes);
        rows.push(row);
        say(`  ${servers} server(s) ${replica ? 'with the replica' : 'on the primary'}: primary CPU ${row.primaryServerCpuMs} ms/s for the servers ` +
          `(${row.primaryCpuMs} all), standby ${row.standbyServerCpuMs} ms/s; event p50 ${row.latencyMs.p50} / p99 ${row.latencyMs.p99} ms, missing ${row.missing}` +
          (row.replicaShare === null ? '' : `, ${Math.round(row.replicaShare * 100)}% of reads on the replica`));
      }
    }
    return rows;
  } finally {
    await pool.end();
    await pair.stop();
  }
}

/** The table `npm run bench -- --replicas` prints. */
export function replicasTable(rows: ReplicaRow[], sizes: ReplicaSizes): string {
  const lines = [
    `${sizes.clients} SSE clients a server, ${sizes.rate} jobs/s for ${sizes.seconds} s drained by a 16-slot worker; CPU in ms a second`,
    '| servers | reads | primary CPU for the servers | primary CPU, all | standby CPU for the servers | event p50 / p95 / p99 ms | missing | reads on the replica |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(`| ${r.servers} | ${r.replica ? 'replica' : 'primary'} | ${r.primaryServerCpuMs} | ${r.primaryCpuMs} | ${r.replica ? r.standbyServerCpuMs : '–'} | ` +
      `${r.latencyMs.p50} / ${r.latencyMs.p95} / ${r.latencyMs.p99} | ${r.missing} | ${r.replicaShare === null ? '–' : `${Math.round(r.replicaShare * 100)}%`} |`);
  }
  return lines.join('\n');
}

// POST→SSE-client latency with many clients connected, and the server's memory.
//   npm run bench -- --sse                     (1, 10, 100 and 1,000 clients, a table)
//   node bin/run-ts.js bench/server-sse-latency.ts [--clients 1,10,100,1000] [--count 60] [--interval 100] [--client-procs 2]
// For each client count: N live SSE connections to `herald server` (its own process), then
// `count` single-job POST /api/jobs `interval` ms apart. A sample is (arrival of that job's
// `enqueued` event at a client) − (the moment its POST was sent), for every client and job.
// The clients run in processes of their own (sse-clients.ts), raw sockets that only look for
// job ids, so the figure is the server's and the kernel's, not a client library's; on a small
// machine they still share its cores with the server.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchDbName } from './peers/harness.ts';
import { percentiles } from './peers/stats.ts';
import { benchDatabase, spawnServer, type ServerProcess } from './server-support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => process.hrtime.bigint();
/** Client processes (each its own event loop): two, one per core of the machine these figures come from. */
const CLIENT_PROCS = 2;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface ClientReport {
  /** [jobId, arrival in ns of process.hrtime] */
  arrivals: [string, string][];
  /** Frames each client received. */
  received: number[];
}

export interface SseClients {
  /** Every client's frames and arrivals so far (each arrival reported once). */
  report(): Promise<ClientReport>;
  close(): Promise<void>;
}

function message<T>(child: ChildProcess, pick: (m: Record<string, unknown>) => T | undefined): Promise<T> {
  return new Promise((resolve, reject) => {
    const on = (m: Record<string, unknown>) => {
      const v = pick(m);
      if (typeof m.error === 'string') settle(() => reject(new Error(m.error as string)));
      else if (v !== undefined) settle(() => resolve(v));
    };
    const exit = (code: number | null) => settle(() => reject(new Error(`SSE client process exited (${code})`)));
    const settle = (fn: () => void) => {
      child.off('message', on);
      child.off('exit', exit);
      fn();
    };
    child.on('message', on);
    child.once('exit', exit);
  });
}

/**
 * `n` live SSE connections to `url`, spread over `procs` client processes (sse-clients.ts);
 * `first`: each client reports only the first frame of each job.
 */
export async function spawnClients(url: string, n: number, procs = 2, first = false): Promise<SseClients> {
  const counts = Array.from({ length: Math.min(procs, n) }, (_, i) => Math.floor(n / procs) + (i < n % procs ? 1 : 0));
  const children = counts.map(() =>
    spawn(process.execPath, [path.join(ROOT, 'bin', 'run-ts.js'), path.join(ROOT, 'bench', 'sse-clients.ts')], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  await Promise.all(
    children.map((c, i) => {
      const ready = message(c, (m) => (m.ready ? true : undefined));
      c.send({ url, clients: counts[i], first });
      return ready;
    }),
  );
  return {
    async report() {
      const parts = await Promise.all(
        children.map((c) => {
          const r = message(c, (m) => (m.arrivals ? (m as unknown as ClientReport) : undefined));
          c.send({ report: true });
          return r;
        }),
      );
      return { arrivals: parts.flatMap((p) => p.arrivals), received: parts.flatMap((p) => p.received) };
    },
    async close() {
      await Promise.all(
        children.map((c) => {
          const exited = new Promise((r) => c.once('exit', r));
          c.send({ close: true });
          return exited;
        }),
      );
    },
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** POST /api/jobs; resolves with the new job's id. */
function post(url: string, body: object): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/api/jobs`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => (res.statusCode === 201 ? resolve((JSON.parse(text) as { id: string }).id) : reject(new Error(`POST answered ${res.statusCode}: ${text}`))));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

export interface SseResult {
  clients: number;
  events: number;
  samples: number;
  missing: number;
  latencyMs: { p50: number; p95: number; p99: number };
  /** The POST's own round trip (its reply carries the committed job): what the stream starts from. */
  postReplyMs: { p50: number; p99: number };
  /** Arrival at a client − the POST's reply (negative: the event beat the reply): the stream's own share. */
  afterReplyMs: { p50: number; p99: number };
  serverRssMb: { connected: number; afterEvents: number };
}

async function measure(server: ServerProcess, clients: number, count: number, intervalMs: number, procs: number): Promise<SseResult> {
  const conns = await spawnClients(server.url, clients, procs);
  await sleep(1000);
  const rssConnected = server.rssMb();
  const sentAt = new Map<string, bigint>();
  const repliedAt = new Map<string, bigint>();
  const replies: number[] = [];
  const ms = (ns: bigint) => Number(ns) / 1e6;
  for (let i = 0; i < count; i++) {
    const sent = now();
    const id = await post(server.url, { kind: 'echo', queue: 'bench' });
    const replied = now();
    sentAt.set(id, sent);
    repliedAt.set(id, replied);
    replies.push(ms(replied - sent));
    await sleep(intervalMs);
  }
  const arrivals: { id: string; at: bigint }[] = [];
  const received = new Array<number>(clients).fill(0);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const r = await conns.report();
    for (const [id, at] of r.arrivals) arrivals.push({ id, at: BigInt(at) });
    r.received.forEach((n, i) => (received[i] = n));
    if (received.every((n) => n >= count) || Date.now() > deadline) break;
    await sleep(50);
  }
  const samples = arrivals.filter((a) => sentAt.has(a.id)).map((a) => ms(a.at - sentAt.get(a.id)!));
  const rssAfter = server.rssMb();
  const missing = received.reduce((s, n) => s + Math.max(0, count - n), 0);
  await conns.close();
  await sleep(500);
  const p = percentiles(samples);
  const r = percentiles(replies);
  const a = percentiles(arrivals.filter((x) => repliedAt.has(x.id)).map((x) => ms(x.at - repliedAt.get(x.id)!)));
  const round = (x: number) => Math.round(x * 100) / 100;
  return { clients, events: count, samples: samples.length, missing, latencyMs: { p50: round(p.p50), p95: round(p.p95), p99: round(p.p99) }, postReplyMs: { p50: round(r.p50), p99: round(r.p99) }, afterReplyMs: { p50: round(a.p50), p99: round(a.p99) }, serverRssMb: { connected: rssConnected, afterEvents: rssAfter } };
}

export interface SseBench {
  database: string;
  intervalMs: number;
  clientProcs: number;
  serverRssMbIdle: number;
  results: SseResult[];
}

/** The whole measurement: a fresh database, one server, then each client count in turn. */
export async function sseLatency(opts: { clients: number[]; count: number; intervalMs: number; clientProcs?: number; say?: (line: string) => void }): Promise<SseBench> {
  const db = await benchDatabase(benchDbName('server_sse'));
  const server = await spawnServer(db.url);
  try {
    const results: SseResult[] = [];
    const idle = server.rssMb();
    for (const n of opts.clients) {
      const r = await measure(server, n, opts.count, opts.intervalMs, opts.clientProcs ?? CLIENT_PROCS);
      results.push(r);
      opts.say?.(`  ${n} clients: p50 ${r.latencyMs.p50} / p95 ${r.latencyMs.p95} / p99 ${r.latencyMs.p99} ms, missing ${r.missing}, POST reply p50 ${r.postReplyMs.p50} ms, RSS ${r.serverRssMb.afterEvents} MiB`);
    }
    return { database: db.label, intervalMs: opts.intervalMs, clientProcs: opts.clientProcs ?? CLIENT_PROCS, serverRssMbIdle: idle, results };
  } finally {
    agent.destroy();
    await server.stop();
    await db.close();
  }
}

/** The table `npm run bench -- --sse` prints. */
export function sseTable(b: SseBench): string {
  const lines = [
    `POST sent → every SSE client, ms (${b.database}, one job every ${b.intervalMs} ms, clients in ${b.clientProcs} processes of their own); the POST's own reply for reference`,
    '| clients | p50 | p95 | p99 | missing | POST reply p50 / p99 | after the reply p50 / p99 | server RSS MiB |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of b.results) {
    lines.push(
      `| ${r.clients.toLocaleString('en-US')} | ${r.latencyMs.p50.toFixed(1)} | ${r.latencyMs.p95.toFixed(1)} | ${r.latencyMs.p99.toFixed(1)} | ${r.missing} | ` +
        `${r.postReplyMs.p50.toFixed(1)} / ${r.postReplyMs.p99.toFixed(1)} | ${r.afterReplyMs.p50.toFixed(1)} / ${r.afterReplyMs.p99.toFixed(1)} | ${r.serverRssMb.afterEvents} |`,
    );
  }
  return lines.join('\n');
}

if (path.resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  const arg = (name: string, fallback: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const result = await sseLatency({
    clients: arg('clients', '1,10,100,1000').split(',').map(Number),
    count: Number(arg('count', '60')),
    intervalMs: Number(arg('interval', '100')),
    clientProcs: Number(arg('client-procs', String(CLIENT_PROCS))),
    say: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${sseTable(result)}\n${JSON.stringify(result, null, 2)}\n`);
}

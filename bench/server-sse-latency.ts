// POST→SSE-client latency with many clients connected, and the server's memory.
//   npm run bench -- --sse                     (1, 10, 100 and 1,000 clients, a table)
//   node bin/run-ts.js bench/server-sse-latency.ts [--clients 1,10,100,1000] [--count 60] [--interval 100]
// For each client count: N live SSE connections to `herald server` (its own process), then
// `count` single-job POST /api/jobs `interval` ms apart. A sample is (arrival of that job's
// `enqueued` event at a client) − (the moment its POST was sent), for every client and job.
// The clients share this process, so their own parsing is part of the figure: an upper bound
// on what separate machines would see.
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createParser } from 'eventsource-parser';
import { percentiles } from './peers/stats.ts';
import { benchDatabase, spawnServer, type ServerProcess } from './server-support.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface SseClient {
  received: number;
  close(): void;
}

/** One live SSE connection; calls onJob(jobId, now) for each `enqueued` event. */
export function connectSse(url: string, onJob: (jobId: string, at: number) => void): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const client: SseClient = { received: 0, close: () => req.destroy() };
    const parser = createParser({
      onEvent(m) {
        const at = performance.now();
        client.received++;
        // The job id without parsing the whole JSON: the clients are many and share a core.
        const id = /"jobId":"(\d+)"/.exec(m.data)?.[1];
        if (id && m.data.includes('"type":"enqueued"')) onJob(id, at);
      },
    });
    const req = http.get(`${url}/api/events`, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream answered ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => parser.feed(chunk));
      res.on('error', () => {});
      resolve(client);
    });
    req.on('error', reject);
  });
}

/** Opens `n` SSE clients, 50 at a time. */
export async function connectMany(url: string, n: number, onJob: (jobId: string, at: number) => void = () => {}): Promise<SseClient[]> {
  const conns: SseClient[] = [];
  for (let i = 0; i < n; i += 50) {
    conns.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => connectSse(url, onJob)))));
  }
  return conns;
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

async function measure(server: ServerProcess, clients: number, count: number, intervalMs: number): Promise<SseResult> {
  const arrivals: { id: string; at: number }[] = [];
  const conns = await connectMany(server.url, clients, (id, at) => arrivals.push({ id, at }));
  await sleep(1000);
  const rssConnected = server.rssMb();
  const sentAt = new Map<string, number>();
  const repliedAt = new Map<string, number>();
  const replies: number[] = [];
  for (let i = 0; i < count; i++) {
    const sent = performance.now();
    const id = await post(server.url, { kind: 'echo', queue: 'bench' });
    sentAt.set(id, sent);
    repliedAt.set(id, performance.now());
    replies.push(performance.now() - sent);
    await sleep(intervalMs);
  }
  const deadline = Date.now() + 30_000;
  while (conns.some((c) => c.received < count) && Date.now() < deadline) await sleep(50);
  const samples = arrivals.filter((a) => sentAt.has(a.id)).map((a) => a.at - sentAt.get(a.id)!);
  const rssAfter = server.rssMb();
  const missing = conns.reduce((s, c) => s + Math.max(0, count - c.received), 0);
  for (const c of conns) c.close();
  await sleep(500);
  const p = percentiles(samples);
  const r = percentiles(replies);
  const a = percentiles(arrivals.filter((x) => repliedAt.has(x.id)).map((x) => x.at - repliedAt.get(x.id)!));
  const round = (x: number) => Math.round(x * 100) / 100;
  return { clients, events: count, samples: samples.length, missing, latencyMs: { p50: round(p.p50), p95: round(p.p95), p99: round(p.p99) }, postReplyMs: { p50: round(r.p50), p99: round(r.p99) }, afterReplyMs: { p50: round(a.p50), p99: round(a.p99) }, serverRssMb: { connected: rssConnected, afterEvents: rssAfter } };
}

export interface SseBench {
  database: string;
  intervalMs: number;
  serverRssMbIdle: number;
  results: SseResult[];
}

/** The whole measurement: a fresh database, one server, then each client count in turn. */
export async function sseLatency(opts: { clients: number[]; count: number; intervalMs: number; say?: (line: string) => void }): Promise<SseBench> {
  const db = await benchDatabase('herald_bench_server_sse');
  const server = await spawnServer(db.url);
  try {
    const results: SseResult[] = [];
    const idle = server.rssMb();
    for (const n of opts.clients) {
      const r = await measure(server, n, opts.count, opts.intervalMs);
      results.push(r);
      opts.say?.(`  ${n} clients: p50 ${r.latencyMs.p50} / p95 ${r.latencyMs.p95} / p99 ${r.latencyMs.p99} ms, missing ${r.missing}, POST reply p50 ${r.postReplyMs.p50} ms, RSS ${r.serverRssMb.afterEvents} MiB`);
    }
    return { database: db.label, intervalMs: opts.intervalMs, serverRssMbIdle: idle, results };
  } finally {
    agent.destroy();
    await server.stop();
    await db.close();
  }
}

/** The table `npm run bench -- --sse` prints. */
export function sseTable(b: SseBench): string {
  const lines = [
    `POST sent → every SSE client, ms (${b.database}, one job every ${b.intervalMs} ms); the POST's own reply for reference`,
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
    say: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${sseTable(result)}\n${JSON.stringify(result, null, 2)}\n`);
}

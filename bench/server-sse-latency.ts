// Commit→SSE-client latency with many clients connected, and the server's memory.
//   node bin/run-ts.js bench/server-sse-latency.ts [--clients 100,1000] [--count 200] [--interval 50]
// For each client count: N live SSE connections to `herald server` (its own process), then
// `count` single-job enqueues `interval` ms apart through the core (each one commit). A
// sample is (arrival of that job's `enqueued` event at a client) − (the enqueue's COMMIT
// acknowledged), for every client and job. The clients share this process, so their own
// parsing is part of the figure: an upper bound on what separate machines would see.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { createParser } from 'eventsource-parser';
import { createPool } from '../queue/database.ts';
import { Queue } from '../queue/queue.ts';
import { percentiles } from './peers/stats.ts';
import { benchDatabase, spawnServer, type ServerProcess } from './server-support.ts';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}
const clientCounts = arg('clients', '100,1000').split(',').map(Number);
const count = Number(arg('count', '200'));
const intervalMs = Number(arg('interval', '50'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Client {
  received: number;
  close(): void;
}

/** One SSE connection; calls onJob(jobId, now) for each `enqueued` event. */
function connect(url: string, onJob: (jobId: string, at: number) => void): Promise<Client> {
  return new Promise((resolve, reject) => {
    const client: Client = { received: 0, close: () => req.destroy() };
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

async function measure(server: ServerProcess, queue: Queue, clients: number) {
  const committed = new Map<string, number>();
  const samples: number[] = [];
  const early: { id: string; at: number }[] = [];
  const onJob = (id: string, at: number) => {
    const t = committed.get(id);
    if (t === undefined) early.push({ id, at });
    else samples.push(at - t);
  };
  const conns: Client[] = [];
  for (let i = 0; i < clients; i += 50) {
    conns.push(...(await Promise.all(Array.from({ length: Math.min(50, clients - i) }, () => connect(server.url, onJob)))));
  }
  await sleep(1000);
  const rssConnected = server.rssMb();
  for (let i = 0; i < count; i++) {
    const { job } = await queue.enqueue({ kind: 'echo', queue: 'bench' });
    committed.set(job.id, performance.now());
    await sleep(intervalMs);
  }
  const deadline = Date.now() + 30_000;
  while (conns.some((c) => c.received < count) && Date.now() < deadline) await sleep(50);
  // An event can beat the producer's own COMMIT acknowledgement to the client: latency ~0.
  for (const e of early) samples.push(Math.max(0, e.at - (committed.get(e.id) ?? e.at)));
  const rssAfter = server.rssMb();
  const missing = conns.reduce((s, c) => s + Math.max(0, count - c.received), 0);
  for (const c of conns) c.close();
  await sleep(500);
  const p = percentiles(samples);
  const round = (x: number) => Math.round(x * 100) / 100;
  return { clients, events: count, samples: samples.length, missing, latencyMs: { p50: round(p.p50), p95: round(p.p95), p99: round(p.p99) }, serverRssMb: { connected: rssConnected, afterEvents: rssAfter } };
}

const db = await benchDatabase('herald_bench_server_sse');
const server = await spawnServer(db.url);
const pool = createPool(db.url, { max: 2 });
const queue = new Queue(pool);
try {
  const results = [];
  const idle = server.rssMb();
  for (const n of clientCounts) {
    results.push(await measure(server, queue, n));
    process.stderr.write(`  ${n} clients: p50 ${results.at(-1)!.latencyMs.p50} ms, p99 ${results.at(-1)!.latencyMs.p99} ms, RSS ${results.at(-1)!.serverRssMb.afterEvents} MiB\n`);
  }
  process.stdout.write(`${JSON.stringify({ database: db.label, intervalMs, serverRssMbIdle: idle, results }, null, 2)}\n`);
} finally {
  await pool.end();
  await server.stop();
  await db.close();
}

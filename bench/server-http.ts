// HTTP enqueue throughput over loopback, against `herald server` in its own process.
//   node bin/run-ts.js bench/server-http.ts [--seconds 10] [--connections 32] [--batch 100]
// Prints single-job requests/s (POST /api/jobs) and jobs/s through POST /api/jobs/batch.
import autocannon from 'autocannon';
import { benchDatabase, spawnServer } from './server-support.ts';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

const seconds = arg('seconds', 10);
const connections = arg('connections', 32);
const batch = arg('batch', 100);

const db = await benchDatabase('herald_bench_server_http');
const server = await spawnServer(db.url);
try {
  const run = (path: string, body: string, conns: number) =>
    autocannon({ url: `${server.url}${path}`, method: 'POST', headers: { 'content-type': 'application/json' }, body, connections: conns, duration: seconds });
  // Warm up (JIT, prepared statements, pool) before measuring.
  await autocannon({ url: `${server.url}/api/jobs`, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"kind":"echo"}', connections, duration: 2 });

  const single = await run('/api/jobs', '{"kind":"echo"}', connections);
  const jobs = JSON.stringify({ jobs: Array.from({ length: batch }, (_, i) => ({ kind: 'echo', payload: { i } })) });
  const batched = await run('/api/jobs/batch', jobs, Math.max(1, Math.floor(connections / 4)));
  const report = {
    database: db.label,
    seconds,
    single: {
      connections,
      requestsPerSecond: Math.round(single.requests.average),
      latencyMs: { p50: single.latency.p50, p99: single.latency.p99 },
      non2xx: single.non2xx,
      errors: single.errors,
    },
    batch: {
      connections: Math.max(1, Math.floor(connections / 4)),
      jobsPerRequest: batch,
      requestsPerSecond: Math.round(batched.requests.average),
      jobsPerSecond: Math.round(batched.requests.average * batch),
      latencyMs: { p50: batched.latency.p50, p99: batched.latency.p99 },
      non2xx: batched.non2xx,
      errors: batched.errors,
    },
    serverRssMb: server.rssMb(),
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} finally {
  await server.stop();
  await db.close();
}

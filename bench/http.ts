// `npm run bench -- --http`: single-job POSTs at 32 connections, Herald's POST /api/jobs against
// a bare Fastify route doing one INSERT per request into a one-column table (http-bare.ts). Both
// servers run as their own processes on the same database server, one after the other, with the
// same warm-up and duration.
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import { spawnServer } from './server-support.ts';

const CONNECTIONS = 32;
const WARMUP_S = 2;
const BODY = '{"kind":"echo"}';

export interface HttpResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function load(url: string, seconds: number): Promise<HttpResult> {
  const opts = { url, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: BODY, connections: CONNECTIONS };
  await autocannon({ ...opts, duration: WARMUP_S });
  const r = await autocannon({ ...opts, duration: seconds });
  return { requestsPerSecond: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors };
}

async function spawnBare(databaseUrl: string): Promise<{ url: string; stop(): Promise<void> }> {
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
  const child = spawn(process.execPath, [path.join(root, 'bin', 'run-ts.js'), path.join(root, 'bench', 'http-bare.ts'), databaseUrl], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bare server exited (${code})`)));
    readline.createInterface({ input: child.stdout }).once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
  });
  return {
    url,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Herald's single enqueue and the bare route, each on its own migrated database. */
export async function httpBench(heraldDbUrl: string, bareDbUrl: string, seconds: number): Promise<{ herald: HttpResult; bare: HttpResult }> {
  const server = await spawnServer(heraldDbUrl);
  let herald: HttpResult;
  try {
    herald = await load(`${server.url}/api/jobs`, seconds);
  } finally {
    await server.stop();
  }
  const bare = await spawnBare(bareDbUrl);
  try {
    return { herald, bare: await load(`${bare.url}/jobs`, seconds) };
  } finally {
    await bare.stop();
  }
}

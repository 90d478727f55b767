// `herald start`, as a user runs it: embedded PostgreSQL in a fresh data dir (DATABASE_URL
// unset), migrations, the board, the server on PORT=0 and a worker. A job sent over HTTP runs
// to success; SIGTERM shuts it all down with exit code 0.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnHerald, type HeraldProcess } from './support/herald-process.ts';

let proc: HeraldProcess | undefined;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-start-'));
fs.chmodSync(dataDir, 0o755);

afterAll(async () => {
  await proc?.dispose();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('herald start', () => {
  it('runs a job end to end and exits 0 on SIGTERM', async () => {
    proc = spawnHerald(['start'], { PORT: '0', HERALD_DATA_DIR: dataDir, DATABASE_URL: undefined, HERALD_LISTEN_URL: undefined, HERALD_TOKENS: undefined, HOST: undefined });
    const line = await proc.waitFor((l) => typeof l.url === 'string', 240_000);
    const url = String(line.url);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const health = await fetch(`${url}/api/health`);
    expect(health.status).toBe(200);
    const res = await fetch(`${url}/api/jobs?wait=30000`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'sleep', payload: { ms: 50 } }),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ kind: 'sleep', status: 'succeeded', result: { slept: 50 } });
    const echo = await fetch(`${url}/api/jobs?wait=30000`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'echo', payload: { hello: 'world' } }),
    });
    expect(await echo.json()).toMatchObject({ status: 'succeeded', result: { hello: 'world' } });
    const board = await fetch(`${url}/`);
    expect(board.status).toBe(200);
    expect(await board.text()).toMatch(/<html/i);

    proc.kill('SIGTERM');
    const { code } = await proc.exited;
    expect(code).toBe(0);
  });
});

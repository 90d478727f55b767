// `herald start`, as a user runs it: embedded PostgreSQL in a fresh data dir (DATABASE_URL
// unset), migrations, the board, the server on PORT=0 and a worker. A job sent over HTTP runs
// to success; SIGTERM shuts it all down with exit code 0. A start that fails stops what it started.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbedded } from '../queue/embedded.ts';
import { alive, spawnCommand, spawnHerald, type HeraldProcess } from './support/herald-process.ts';
import { waitFor } from './support/wait.ts';

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

    // The start-up log: where the board is and what to do next, near the top; said once; no warning.
    const next = await proc.waitForMessage(/^next: /);
    const startup = proc.lines.slice(0, proc.lines.indexOf(next) + 1);
    const msgs = startup.map((l) => String(l.msg));
    expect(msgs).toContain(`Herald is running: the board is at ${url}/`);
    expect(next.msg).toContain(`curl -X POST ${url}/api/jobs`);
    expect(next.msg).toContain('npx herald worker --tasks ./tasks');
    expect(msgs.filter((m) => /listening/i.test(m))).toEqual([`Herald server listening on ${url}`]);
    expect(msgs).toContain('auth: off (loopback only)');
    expect(startup.filter((l) => (l.level ?? 0) >= 40), 'warnings at a clean start').toEqual([]);
    expect(startup.length).toBeLessThanOrEqual(12);

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

    // A schedule every second makes jobs, but logs nothing at info (it would bury everything else).
    const schedule = await fetch(`${url}/api/schedules/every-second`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ cron: '* * * * * *', job: { kind: 'echo' } }),
    });
    expect(schedule.status).toBe(201);
    const made = async () => ((await (await fetch(`${url}/api/jobs?kind=echo&limit=10`)).json()) as { jobs: { idempotencyKey: string | null }[] }).jobs;
    await waitFor(async () => (await made()).filter((j) => j.idempotencyKey?.startsWith('schedule:')).length >= 2, {
      what: 'two jobs made by the schedule',
      everyMs: 100,
    });
    expect(proc.lines.filter((l) => /schedul/i.test(String(l.msg)))).toEqual([]);
    expect(proc.lines.filter((l) => (l.level ?? 0) >= 40)).toEqual([]);
    const board = await fetch(`${url}/`);
    expect(board.status).toBe(200);
    expect(await board.text()).toMatch(/<html/i);

    proc.kill('SIGTERM');
    const { code } = await proc.exited;
    expect(code).toBe(0);
  });
});

describe('herald start that cannot start', () => {
  it('with its port taken: exits non-zero saying how to pick another, and stops the PostgreSQL it started', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as net.AddressInfo;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-port-'));
    fs.chmodSync(dir, 0o755);
    try {
      const failed = spawnCommand(['npm', 'start'], { PORT: String(port), HERALD_DATA_DIR: dir, DATABASE_URL: undefined, HERALD_LISTEN_URL: undefined, HERALD_TOKENS: undefined, HOST: undefined });
      const ready = failed.waitForMessage(/^embedded PostgreSQL ready$/, 240_000);
      const { code } = await failed.exited;
      expect(code).not.toBe(0);
      // It did start PostgreSQL, so the test below is not vacuous.
      const { port: pgPort } = await ready;
      expect(pgPort).toEqual(expect.any(Number));
      const message = failed.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('herald: '))?.msg;
      expect(message).toBe(`herald: port ${port} on 127.0.0.1 is already in use: set PORT to a free port (PORT=${port + 1}), or PORT=0 for any free port`);
      // No postmaster left: the pid file is gone (clean shutdown), or names a dead process.
      const pidFile = path.join(dir, 'pgdata', 'postmaster.pid');
      if (fs.existsSync(pidFile)) expect(alive(Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]))).toBe(false);
    } finally {
      blocker.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('herald migrate that fails', () => {
  it('exits 1 with the reason and stops the PostgreSQL it started', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-migrate-'));
    fs.chmodSync(dir, 0o755);
    try {
      // A database that already holds a schema `herald` of its own: the first migration cannot apply.
      const pgc = await startEmbedded(dir);
      const client = new pg.Client({ connectionString: pgc.url });
      await client.connect();
      await client.query('CREATE SCHEMA herald; CREATE TABLE herald.jobs (mine int)');
      await client.end();
      await pgc.stop();

      const failed = spawnHerald(['migrate'], { HERALD_DATA_DIR: dir, DATABASE_URL: undefined, HERALD_LISTEN_URL: undefined });
      const ready = failed.waitForMessage(/^embedded PostgreSQL ready$/);
      const { code } = await failed.exited;
      expect(code).toBe(1);
      expect((await ready).reused).toBe(false);
      expect(failed.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('herald: '))).toHaveLength(1);
      const pidFile = path.join(dir, 'pgdata', 'postmaster.pid');
      if (fs.existsSync(pidFile)) expect(alive(Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]))).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

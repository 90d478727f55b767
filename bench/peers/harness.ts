// Measurement plumbing shared by every peer, so each is timed the same way.
import fs from 'node:fs';
import pg from 'pg';
import { withDatabase } from '../../queue/database.ts';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/herald_bench';

/**
 * A bench database's name: `herald_bench_<what>`, or BENCH_DB_PREFIX_<what>, so two benches on one
 * shared server (each drops and recreates its databases) do not drop each other's.
 */
export const benchDbName = (what: string): string => `${process.env.BENCH_DB_PREFIX || 'herald_bench'}_${what}`;
/**
 * The durable bench's sleep: the shortest that waits. A sleep of 0 returns at once in Herald and in
 * DBOS alike (its wake-up has passed), so it would time nothing.
 */
export const SLEEP_MS = 1;
/** Worker concurrency every peer is run with. */
export const CONCURRENCY = 16;
/** Jobs added (and discarded) before latency sampling, so first-use costs aren't sampled. */
const LATENCY_WARMUP = 5;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Creates the benchmark database if missing, connecting through the `postgres` db. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}

/** Kernel clock ticks per second (USER_HZ), the unit of /proc/<pid>/stat's CPU times on Linux. */
const CLOCK_TICKS = 100;

/**
 * CPU time (user + system) of process `pid` in µs, read from /proc, or NaN when it is not a local
 * process (PostgreSQL on another machine). On a shared, busy machine it moves far less than wall time.
 */
export function processCpuUs(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS) * 1e6;
  } catch {
    return NaN;
  }
}

/** The server process behind a connection (a client or a one-connection pool), whose CPU /proc shows. */
export async function backendPid(db: pg.Client | pg.Pool): Promise<number> {
  return (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
}

/** The middle of `xs` (the upper middle of an even count): what every bench reports over its rounds. */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** `xs` started at index `k` (wrapping): round `k`'s order, so no runner or variant always goes first. */
export const rotate = <T>(xs: readonly T[], k: number): T[] => xs.map((_, i) => xs[(i + k) % xs.length]);

/** Runs `fn` on a short-lived client of its own (setup/teardown, never on the timed path). */
export async function withClient<T>(databaseUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Drops and recreates the bench database `benchDbName(what)` on the server of `baseUrl`, and
 * returns its URL: each measurement starts from an empty database.
 */
export async function freshBenchDatabase(baseUrl: string, what: string): Promise<string> {
  const name = benchDbName(what);
  await withClient(baseUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${c.escapeIdentifier(name)}`);
  });
  return withDatabase(baseUrl, name);
}

export async function dropBenchDatabase(baseUrl: string, what: string): Promise<void> {
  await withClient(baseUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(benchDbName(what))} WITH (FORCE)`));
}

export async function dropSchema(databaseUrl: string, schema: string): Promise<void> {
  await withClient(databaseUrl, (c) => c.query(`DROP SCHEMA IF EXISTS ${c.escapeIdentifier(schema)} CASCADE`));
}

/**
 * ANALYZEs every table of `schema`. Untimed, after the drain jobs are in, for every peer as for
 * Herald: autovacuum is off on this machine's PG 15, so a fresh table would otherwise have no
 * statistics and the planner would take the queue for empty (a steady-state server has them).
 */
export async function analyzeSchema(databaseUrl: string, schema: string): Promise<void> {
  await withClient(databaseUrl, async (c) => {
    const { rows } = await c.query<{ t: string }>(
      `SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname = $1`,
      [schema],
    );
    for (const { t } of rows) await c.query(`ANALYZE ${t}`);
  });
}

/** Resolves once `tick` has been called `n` times. */
export class Countdown {
  readonly promise: Promise<void>;
  #left: number;
  #resolve!: () => void;
  constructor(n: number) {
    this.#left = n;
    this.promise = new Promise((resolve) => (this.#resolve = resolve));
    if (n <= 0) this.#resolve();
  }
  tick(k = 1): void {
    this.#left -= k;
    if (this.#left <= 0) this.#resolve();
  }
}

/**
 * Polls `count` until it returns 0. Libraries complete jobs after the handler returns (some
 * batch it), so "last job completed" means the database agrees, not that the handler ran.
 */
export async function untilZero(count: () => Promise<number>, pollMs = 2): Promise<void> {
  while ((await count()) > 0) await sleep(pollMs);
}

/** Rejects if a worker's lifetime promise settles before we're done with it. */
export function failOnExit(lifetime: Promise<unknown>, what: string): Promise<never> {
  const failed = lifetime.then(
    () => Promise.reject(new Error(`${what} exited early`)),
    (err: unknown) => {
      throw err;
    },
  );
  // Our own stop() settles `lifetime` after the race is over; that must not be unhandled.
  failed.catch(() => {});
  return failed;
}

/**
 * Drives the latency series: adds warm-up + `count` jobs at a fixed cadence, each tagged
 * with its index; the peer's handler reports the index to `started` as its first act.
 */
export class LatencyProbe {
  readonly #sentAt: number[] = [];
  readonly #samples: number[] = [];
  #all!: Countdown;

  /** Call first thing in the handler, with the job's index. */
  started = (i: number): void => {
    const t = performance.now();
    if (this.#samples[i] !== undefined || this.#sentAt[i] === undefined) return; // duplicate/unknown
    this.#samples[i] = t - this.#sentAt[i];
    this.#all.tick();
  };

  async run(count: number, intervalMs: number, add: (i: number) => Promise<unknown>): Promise<number[]> {
    const total = LATENCY_WARMUP + count;
    this.#all = new Countdown(total);
    const t0 = performance.now();
    for (let i = 0; i < total; i++) {
      // Fixed cadence: job i goes out at t0 + i*interval however long the adds take.
      const wait = t0 + i * intervalMs - performance.now();
      if (wait > 0) await sleep(wait);
      this.#sentAt[i] = performance.now();
      await add(i);
    }
    const timeoutMs = 10_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const missing = total - this.#samples.filter((s) => s !== undefined).length;
        reject(new Error(`latency: ${missing} of ${total} jobs not started ${timeoutMs} ms after the last add`));
      }, timeoutMs);
    });
    try {
      await Promise.race([this.#all.promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
    return this.#samples.slice(LATENCY_WARMUP);
  }
}

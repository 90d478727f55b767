// Bare-SQL floor: no library, just a table, SKIP LOCKED batch claims and LISTEN/NOTIFY wake-ups.
// It does the least work a correct queue can do, so it bounds what a library could reach here.
import pg from 'pg';
import { CONCURRENCY, Countdown, LatencyProbe, analyzeSchema, failOnExit, withClient } from './harness.ts';
import type { PeerRunner } from './types.ts';

const SCHEMA = 'bench_sql';
const CHANNEL = 'bench_sql_jobs';
const BATCH = 500;
/** Backstop poll for a missed notification, as any real LISTEN-based worker needs. */
const IDLE_POLL_MS = 1_000;

const SETUP = `
  DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE;
  CREATE SCHEMA ${SCHEMA};
  CREATE TABLE ${SCHEMA}.jobs (
    id bigserial PRIMARY KEY,
    payload jsonb NOT NULL DEFAULT '{}',
    locked_at timestamptz -- null = queued; claimed rows are deleted on completion
  );
  CREATE INDEX jobs_queued ON ${SCHEMA}.jobs (id) WHERE locked_at IS NULL;`;
const CLAIM = `
  UPDATE ${SCHEMA}.jobs SET locked_at = now()
  WHERE id IN (SELECT id FROM ${SCHEMA}.jobs WHERE locked_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
  RETURNING id, payload`;
const COMPLETE = `DELETE FROM ${SCHEMA}.jobs WHERE id = ANY($1::bigint[])`;
const BULK_INSERT = `INSERT INTO ${SCHEMA}.jobs (payload) SELECT '{}'::jsonb FROM generate_series(1, $1)`;
// Trigger-less wake-up: the NOTIFY rides in the insert's own transaction.
const ADD = `WITH j AS (INSERT INTO ${SCHEMA}.jobs (payload) VALUES ($1) RETURNING id)
  SELECT pg_notify('${CHANNEL}', id::text) FROM j`;

type Handler = (payload: unknown) => unknown;

/** CONCURRENCY loops; each claims a batch, runs its handlers one by one, deletes the batch. */
class FloorWorker {
  readonly #pool: pg.Pool;
  readonly #listener: pg.Client;
  readonly #handler: Handler;
  readonly #onCompleted: (n: number) => void;
  readonly #idle: Array<() => void> = [];
  #notified = 0; // bumps on every notification, so a loop can tell it raced one
  #stopping = false;
  done: Promise<unknown> = Promise.resolve();

  constructor(databaseUrl: string, handler: Handler, onCompleted: (n: number) => void = () => {}) {
    this.#pool = new pg.Pool({ connectionString: databaseUrl, max: CONCURRENCY });
    this.#listener = new pg.Client({ connectionString: databaseUrl });
    this.#handler = handler;
    this.#onCompleted = onCompleted;
  }

  async start(): Promise<void> {
    await this.#listener.connect();
    this.#listener.on('notification', () => {
      this.#notified++;
      this.#idle.shift()?.();
    });
    await this.#listener.query(`LISTEN ${CHANNEL}`);
    this.done = Promise.all(Array.from({ length: CONCURRENCY }, () => this.#loop()));
  }

  async #loop(): Promise<void> {
    while (!this.#stopping) {
      const seen = this.#notified;
      const { rows } = await this.#pool.query<{ id: string; payload: unknown }>(CLAIM, [BATCH]);
      if (rows.length === 0) {
        // A notification that arrived during the claim may be for a row the claim couldn't see yet.
        if (this.#notified === seen) await this.#waitForWork();
        continue;
      }
      if (rows.length === BATCH) this.#idle.shift()?.(); // probably more waiting: fan out
      for (const row of rows) await this.#handler(row.payload);
      await this.#pool.query(COMPLETE, [rows.map((r) => r.id)]);
      this.#onCompleted(rows.length);
    }
  }

  #waitForWork(): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        const at = this.#idle.indexOf(wake);
        if (at >= 0) this.#idle.splice(at, 1);
        resolve();
      };
      const timer = setTimeout(wake, IDLE_POLL_MS);
      this.#idle.push(wake);
    });
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    for (const wake of [...this.#idle]) wake();
    try {
      await this.done;
    } finally {
      await this.#listener.end();
      await this.#pool.end();
    }
  }
}

const sql: PeerRunner = {
  name: 'sql',

  async drain(databaseUrl, jobs) {
    await withClient(databaseUrl, async (c) => {
      await c.query(SETUP);
      await c.query(BULK_INSERT, [jobs]);
    });
    await analyzeSchema(databaseUrl, SCHEMA);
    const completed = new Countdown(jobs);
    const t0 = performance.now();
    const worker = new FloorWorker(databaseUrl, () => {}, (n) => completed.tick(n));
    try {
      await worker.start();
      await Promise.race([completed.promise, failOnExit(worker.done, 'sql worker')]);
      return jobs / ((performance.now() - t0) / 1000);
    } finally {
      await worker.stop();
    }
  },

  async latency(databaseUrl, count, intervalMs) {
    await withClient(databaseUrl, (c) => c.query(SETUP));
    const probe = new LatencyProbe();
    const worker = new FloorWorker(databaseUrl, (payload) => probe.started((payload as { i: number }).i));
    const producer = new pg.Client({ connectionString: databaseUrl });
    try {
      await producer.connect();
      await worker.start();
      return await Promise.race([
        probe.run(count, intervalMs, (i) => producer.query(ADD, [{ i }])),
        failOnExit(worker.done, 'sql worker'),
      ]);
    } finally {
      await producer.end();
      await worker.stop();
    }
  },
};

export default sql;

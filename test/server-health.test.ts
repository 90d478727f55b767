// Operations: /api/health through a database outage (a TCP proxy in front of PostgreSQL that
// we cut and restore), the stream catching up afterwards, the work counters in /metrics, and the
// session that holds the stream back named in both.
import net from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { HeraldClient, type StreamEvent } from '../client/index.ts';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { simulateWorker, testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

/** A TCP proxy to PostgreSQL that can be cut (connections dropped, port refused) and restored. */
class CuttableProxy {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  up = false;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const [a, b] of [[client, upstream], [upstream, client]]) {
        this.sockets.add(a);
        a.on('error', () => b.destroy());
        a.on('close', () => {
          this.sockets.delete(a);
          b.destroy();
        });
        a.pipe(b);
      }
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    this.up = true;
  }

  async cut(): Promise<void> {
    this.up = false;
    const closed = new Promise((resolve) => this.server!.close(resolve));
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}

let db: TestDatabase;
let proxy: CuttableProxy;
let s: TestServer;

beforeAll(async () => {
  db = await createTestDatabase({ backoffBaseMs: 5, backoffMaxMs: 10 });
  const u = new URL(db.url);
  proxy = new CuttableProxy({ host: u.hostname, port: Number(u.port) });
  await proxy.start();
  u.hostname = '127.0.0.1';
  u.port = String(proxy.port);
  s = await testServer({ db, databaseUrl: u.toString(), listen: true });
});
afterEach(async () => {
  // A failed outage test must not leave the next one without a database.
  if (!proxy.up) await proxy.start();
});
afterAll(async () => {
  await s.close();
  if (proxy.up) await proxy.cut();
  await db.drop();
});

const health = async () => {
  const res = await fetch(`${s.url}/api/health`);
  return { status: res.status, body: await res.json() };
};

describe('health through a database outage', () => {
  it('answers 503 while the database is unreachable, keeps streams open, and recovers', async () => {
    expect(await health()).toMatchObject({ status: 200, body: { ok: true, db: 'up', listener: 'up' } });
    const events: StreamEvent[] = [];
    const stream = new HeraldClient({ baseUrl: s.url }).events();
    const consuming = (async () => {
      for await (const e of stream) events.push(e);
    })();
    await waitFor(() => stream.lastEventId !== undefined, { what: 'stream.lastEventId !== undefined' });

    await proxy.cut();
    const down = await health();
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ ok: false, db: 'down', tables: [] });
    await waitFor(async () => (await health()).body.listener === 'down', { what: 'health to say the listener is down' });
    const refused = await fetch(`${s.url}/api/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"kind":"k"}' });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      message: expect.stringMatching(/database is unreachable/),
      code: 'HERALD_DATABASE_UNAVAILABLE',
    });
    // Metrics still answer; the tailer reports the database down after its next read fails.
    await waitFor(async () => {
      const metrics = await fetch(`${s.url}/metrics`);
      expect(metrics.status).toBe(200);
      return /herald_database_up 0/.test(await metrics.text());
    }, { what: 'metrics to report the database down' });

    // Work goes on behind the server's back, straight into the database.
    await db.queue.enqueueMany(Array.from({ length: 25 }, () => ({ kind: 'during-outage' })));

    await proxy.start();
    await waitFor(async () => {
      const h = await health();
      return h.status === 200 && h.body.listener === 'up';
    }, { what: 'health to say the listener is up again' });
    // The stream that stayed open catches up on what happened meanwhile.
    await waitFor(() => events.length === 25, { what: 'events.length === 25' });
    expect(events.every((e) => e.kind === 'during-outage')).toBe(true);
    expect(stream.reconnects).toBe(0);
    const ok = await fetch(`${s.url}/api/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"kind":"after"}' });
    expect(ok.status).toBe(201);
    await waitFor(() => events.length === 26, { what: 'events.length === 26' });
    stream.close();
    await consuming;
  });
});

describe('metrics', () => {
  it('counts enqueues, claims, completions and failures from the event stream', async () => {
    const stop = new AbortController();
    const workers = [simulateWorker(db.queue, 'm1', stop.signal), simulateWorker(db.queue, 'm2', stop.signal)];
    await db.queue.enqueueMany([
      ...Array.from({ length: 6 }, () => ({ kind: 'ok', queue: 'mq' })),
      ...Array.from({ length: 2 }, () => ({ kind: 'bad', queue: 'mq', payload: { fail: true }, maxAttempts: 2 })),
    ]);
    try {
      await waitFor(async () => (await db.queue.counts()).find((c) => c.queue === 'mq')?.failed === 2, { what: 'two failed jobs in queue mq' });
    } finally {
      stop.abort();
      await Promise.all(workers);
    }
    const value = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    let text = '';
    await waitFor(async () => {
      text = await (await fetch(`${s.url}/metrics`)).text();
      return value(text, 'herald_jobs_failed_total{queue="mq",outcome="failed"}') === 2;
    }, { what: 'two failures of mq in /metrics' });
    expect(value(text, 'herald_jobs_enqueued_total{queue="mq"}')).toBe(8);
    expect(value(text, 'herald_jobs_claimed_total{queue="mq"}')).toBe(10);
    expect(value(text, 'herald_jobs_completed_total{queue="mq"}')).toBe(6);
    expect(value(text, 'herald_jobs_failed_total{queue="mq",outcome="retry_scheduled"}')).toBe(2);
    expect(value(text, 'herald_jobs{queue="mq",status="succeeded"}')).toBe(6);
    expect(value(text, 'herald_jobs{queue="mq",status="failed"}')).toBe(2);
    expect(value(text, 'herald_database_up')).toBe(1);
    expect(text).toMatch(/^herald_table_dead_tuples\{table="job_events"\} \d+/m);
    expect(text).toMatch(/^herald_stream_lag_seconds \d/m);
  });
});

describe('the stream horizon', () => {
  /** A live stream from the server, collecting its events until closed. */
  async function liveStream() {
    const events: StreamEvent[] = [];
    const stream = new HeraldClient({ baseUrl: s.url }).events();
    const consuming = (async () => {
      for await (const e of stream) events.push(e);
    })();
    await waitFor(() => stream.lastEventId !== undefined, { what: 'stream.lastEventId !== undefined' });
    const close = async () => {
      stream.close();
      await consuming;
    };
    return { events, close };
  }
  const post = async (kind: string) =>
    (await (await fetch(`${s.url}/api/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ kind }) })).json()) as { id: string };

  it('streams on while another database holds a long transaction, and names none', async () => {
    const other = new pg.Client({ connectionString: inject('pgAdminUrl'), application_name: 'health-test:other-db' });
    await other.connect();
    const { events, close } = await liveStream();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_current_xact_id()');
      const job = await post('beside-other-db');
      // Arrives while the other database's transaction stays open (the old, cluster-wide horizon waited for it).
      await waitFor(() => events.some((e) => e.jobId === job.id), { what: 'events.some((e) => e.jobId === job.id)' });
      expect((await health()).body.streamHeldBy).toBeNull();
    } finally {
      await other.query('ROLLBACK');
      await other.end();
      await close();
    }
  });

  it('names the session of this database that holds the stream back, in /api/health and /metrics', async () => {
    const writer = new pg.Client({ connectionString: db.url, application_name: 'health-test:long-writer' });
    await writer.connect();
    const { events, close } = await liveStream();
    try {
      const pid = (await writer.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      await writer.query('BEGIN');
      await writer.query(`INSERT INTO herald.jobs (kind) VALUES ('long-writer')`);
      const later = await post('behind-long-writer');
      let body: Record<string, unknown> = {};
      await waitFor(async () => {
        body = (await health()).body;
        return body.streamHeldBy !== null;
      }, { what: 'health to name the transaction holding the stream' });
      expect(body.streamHeldBy).toEqual({
        xid: expect.stringMatching(/^\d+$/),
        pid,
        applicationName: 'health-test:long-writer',
        state: 'idle in transaction',
        gid: null,
        transactionStart: expect.any(String),
        queryStart: expect.any(String),
        ageMs: expect.any(Number),
      });
      expect((body.streamHeldBy as { ageMs: number }).ageMs).toBeGreaterThanOrEqual(1000);
      expect(events.some((e) => e.jobId === later.id)).toBe(false); // held back, not lost
      const text = await (await fetch(`${s.url}/metrics`)).text();
      expect(text).toMatch(new RegExp(`^herald_stream_holder_transaction_age_seconds\\{pid="${pid}",application_name="health-test:long-writer",state="idle in transaction",xid="\\d+",gid=""\\} \\d`, 'm'));
      expect(text).toMatch(new RegExp(`^herald_stream_holder_query_start_timestamp_seconds\\{pid="${pid}",[^}]*\\} \\d`, 'm'));

      await writer.query('COMMIT');
      await waitFor(() => events.some((e) => e.jobId === later.id), { what: 'events.some((e) => e.jobId === later.id)' });
      const kinds = events.map((e) => e.kind);
      expect(kinds.indexOf('long-writer')).toBeGreaterThanOrEqual(0);
      expect(kinds.indexOf('long-writer')).toBeLessThan(kinds.indexOf('behind-long-writer'));
      await waitFor(async () => (await health()).body.streamHeldBy === null, { what: '(await health()).body.streamHeldBy === null' });
      await waitFor(async () => !/^herald_stream_holder_transaction_age_seconds\{/m.test(await (await fetch(`${s.url}/metrics`)).text()), { what: 'the holder gauge to leave /metrics' });
    } finally {
      await writer.end();
      await close();
    }
  });
});

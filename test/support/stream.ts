// What the SSE stream tests share: a server over real HTTP on the test file's own database (its
// jobs and events emptied before each test), a client of it, and checks of what a client
// received against the job_events rows: same events, (tx, id) order, no gap, no repeat.
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { HeraldClient, type EventStream, type StreamEvent } from '../../client/index.ts';
import { useTestDatabase } from './db.ts';
import { simulateWorker, sleep, testServer, type TestServer } from '../server-support.ts';
import { waitFor } from './wait.ts';

interface Row {
  id: string;
  job_id: string;
  queue: string;
  type: string;
  status: string;
  attempt: number;
}

/** The stream equals the rows: same ids in the same order, and the fields agree. */
export function expectSameAsRows(events: StreamEvent[], expected: Row[]) {
  expect(events.map((e) => e.eventId)).toEqual(expected.map((r) => r.id));
  events.forEach((e, i) => {
    const r = expected[i];
    expect({ jobId: e.jobId, queue: e.queue, type: e.type, status: e.status, attempt: e.attempt }).toEqual({
      jobId: r.job_id, queue: r.queue, type: r.type, status: r.status, attempt: r.attempt,
    });
  });
}

/** The test file's server and a client of it: set before its tests by useStreamServer (live bindings). */
export let s: TestServer;
export let client: HeraldClient;

/** Starts the file's server (s, client) on its own database; returns the helpers on that database. */
export function useStreamServer() {
  const db = useTestDatabase({ backoffBaseMs: 5, backoffMaxMs: 20 }, { truncate: ['herald.jobs', 'herald.job_events'] });
  beforeAll(async () => {
    s = await testServer({ db, listen: true });
    client = new HeraldClient({ baseUrl: s.url });
  });
  afterAll(() => s.close());

  async function rows(where = 'true', values: unknown[] = []): Promise<Row[]> {
    const { rows } = await db.pool.query(`SELECT id, job_id, queue, type, status, attempt FROM herald.job_events WHERE ${where} ORDER BY tx, id`, values);
    return rows;
  }

  const open: EventStream[] = [];
  afterEach(() => {
    for (const st of open.splice(0)) st.close();
  });

  /** Consumes a stream in the background, collecting what it yields; closed after each test. */
  function collect(stream: EventStream) {
    open.push(stream);
    const events: StreamEvent[] = [];
    const done = (async () => {
      for await (const e of stream) events.push(e);
    })();
    return { events, done };
  }

  /** Mixed work: batches and single jobs on two queues; some fail once, some report progress, some are cancelled. */
  async function produce(jobs: number, stop?: AbortSignal): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < jobs && !stop?.aborted; i += 10) {
      const batch = Array.from({ length: 10 }, (_, k) => {
        const n = i + k;
        return {
          kind: n % 3 ? 'echo' : 'work',
          queue: n % 2 ? 'odd' : 'even',
          payload: n % 7 === 0 ? { fail: true } : n % 5 === 0 ? { progress: 50 } : { n },
          maxAttempts: 2,
          runAt: n % 11 === 0 ? new Date(Date.now() + 30) : undefined,
        };
      });
      const made = i % 20 ? await db.queue.enqueueMany(batch) : await Promise.all(batch.map((b) => db.queue.enqueue(b)));
      ids.push(...made.map((m) => m.job.id));
      if (i % 40 === 0) await db.queue.cancel(made[3].job.id).catch(() => {});
      await sleep(2);
    }
    return ids;
  }

  async function allEnded(): Promise<boolean> {
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM herald.jobs WHERE status NOT IN ('succeeded', 'failed', 'cancelled')`);
    return rows[0].n === 0;
  }

  /** Runs `during` with `workers` in-process workers, until every job has ended; returns the event rows. */
  async function workload(workers: number, during: (stop: AbortSignal) => Promise<unknown>): Promise<Row[]> {
    const stop = new AbortController();
    const running = Array.from({ length: workers }, (_, i) => simulateWorker(db.queue, `sim:${i}`, stop.signal));
    try {
      await during(stop.signal);
      await waitFor(allEnded, { what: 'allEnded' });
    } finally {
      stop.abort();
      await Promise.all(running);
    }
    return rows();
  }

  /** Waits until each collector holds as many events as expected, and a little longer for any extra. */
  async function receivedAll(collectors: { events: StreamEvent[] }[], expected: number, settleMs = 100): Promise<void> {
    await waitFor(() => collectors.every((c) => c.events.length >= expected), { what: 'collectors.every((c) => c.events.length >= expected)' });
    await sleep(settleMs);
  }

  return { db, rows, open, collect, produce, workload, receivedAll };
}

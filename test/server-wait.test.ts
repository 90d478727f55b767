// ?wait=MS on POST /api/jobs, and idempotency under concurrency, over real HTTP.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { useTestDatabase } from './support/db.ts';
import { simulateWorker, testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

const db = useTestDatabase({ backoffBaseMs: 5, backoffMaxMs: 10 }, { truncate: ['herald.jobs', 'herald.job_events'] });
let s: TestServer;
beforeAll(async () => {
  s = await testServer({ db, listen: true });
});
afterAll(() => s.close());
afterEach(() => vi.restoreAllMocks());

const enqueue = (body: object, query = '', headers: Record<string, string> = {}) =>
  fetch(`${s.url}/api/jobs${query}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** Workers that run while fn does. */
async function withWorkers<T>(fn: () => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const workers = [simulateWorker(db.queue, 'w1', stop.signal), simulateWorker(db.queue, 'w2', stop.signal)];
  try {
    return await fn();
  } finally {
    stop.abort();
    await Promise.all(workers);
  }
}

describe('?wait', () => {
  it('holds the reply until the job succeeds: 201 with the final job', async () => {
    const res = await withWorkers(() => enqueue({ kind: 'echo' }, '?wait=30000'));
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ status: 'succeeded', result: { ok: '1' }, attempt: 1 });
  });

  it('ends with a failed job after its retries', async () => {
    const res = await withWorkers(() => enqueue({ kind: 'x', payload: { fail: true }, maxAttempts: 3 }, '?wait=30000'));
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ status: 'failed', attempt: 3, lastError: { message: 'asked to fail' } });
  });

  it('answers 202 with the job as it is when the wait runs out', async () => {
    const res = await enqueue({ kind: 'nobody-runs-this' }, '?wait=300');
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ id: '1', status: 'queued' });
  });

  it('returns at once for a key whose job already ended (200), and 201 without a wait', async () => {
    const first = await withWorkers(() => enqueue({ kind: 'echo' }, '?wait=30000', { 'idempotency-key': 'k1' }));
    expect(first.status).toBe(201);
    const again = await enqueue({ kind: 'echo' }, '?wait=60000', { 'idempotency-key': 'k1' });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ id: '1', status: 'succeeded' });
    expect((await enqueue({ kind: 'echo' }, '?wait=0')).status).toBe(201);
  });

  it('ends when the job is cancelled while it waits', async () => {
    const held = enqueue({ kind: 'slow' }, '?wait=60000');
    await waitFor(async () => (await db.queue.get('1')) !== null, { what: 'job 1 to exist' });
    await fetch(`${s.url}/api/jobs/1/cancel`, { method: 'POST' });
    const res = await held;
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ status: 'cancelled' });
  });

  it('is driven by events: the row is read once per terminal event, not polled', async () => {
    const get = vi.spyOn(s.queue, 'get');
    const held = enqueue({ kind: 'stepper' }, '?wait=60000');
    await waitFor(async () => (await db.queue.get('1')) !== null, { what: 'job 1 to exist' });
    // Many non-terminal events (claim, 30 progress reports) while the reply waits.
    // The test's own watcher of the job: the fan-out calls every watcher of an event before the
    // next, so once it has the 30th report, the reply's watcher has had all of them. Caught:
    // waitForEnd waking on every event (its TERMINAL check removed: 27 reads, not 3).
    let reports = 0;
    const unwatch = s.hub.fanout.watchJob('1', (e) => void (e.type === 'progress' && reports++));
    const [job] = await db.queue.claim({ worker: 'manual', limit: 1 });
    for (let p = 1; p <= 30; p++) await db.queue.progress('manual', job, p);
    await waitFor(() => reports === 30, { what: 'the 30 progress events to reach the watchers' });
    unwatch();
    expect((await fetch(`${s.url}/api/jobs/1`)).status).toBe(200); // one more get, from this request
    await db.queue.complete('manual', [{ id: job.id, attempt: job.attempt, result: 'done' }]);
    const res = await held;
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ status: 'succeeded', result: 'done' });
    // Once after subscribing, once for the success event, once for the GET above.
    expect(get.mock.calls.length).toBe(3);
  });

  it('answers held replies at once when the server shuts down', async () => {
    const other = await testServer({ db, listen: true });
    const held = fetch(`${other.url}/api/jobs?wait=60000`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"kind":"never"}' });
    await waitFor(async () => (await db.queue.get('1')) !== null, { what: 'job 1 to exist' });
    const closing = other.close();
    const res = await held;
    expect(res.status).toBe(202);
    await closing;
  });
});

describe('idempotency under concurrency', () => {
  it('20 simultaneous POSTs with one key make exactly one job: one 201, nineteen 200', async () => {
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => enqueue({ kind: 'charge', payload: { amount: 5 } }, '', { 'idempotency-key': 'pay-42' })),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((c) => c === 201)).toHaveLength(1);
    expect(statuses.filter((c) => c === 200)).toHaveLength(19);
    const ids = new Set(await Promise.all(replies.map(async (r) => (await r.json()).id)));
    expect(ids.size).toBe(1);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(1);
  });

  it('20 simultaneous POSTs with one key but different payloads: one 201, the rest 409', async () => {
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => enqueue({ kind: 'charge', payload: { amount: i } }, '', { 'idempotency-key': 'pay-43' })),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((c) => c === 201)).toHaveLength(1);
    expect(statuses.filter((c) => c === 409)).toHaveLength(19);
  });
});

// The typed client (client/index.ts) against a real server with tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeraldApiError, HeraldClient, type StreamEvent } from '../client/index.ts';
import { rollupAll } from './support/history.ts';
import { TOKEN_SPEC, TOKENS, simulateWorker, testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer;
let producer: HeraldClient;
let admin: HeraldClient;
beforeAll(async () => {
  s = await testServer({ listen: true, tokens: TOKEN_SPEC });
  producer = new HeraldClient({ baseUrl: `${s.url}/`, token: TOKENS.producer });
  admin = new HeraldClient({ baseUrl: s.url, token: TOKENS.admin });
});
afterAll(() => s.close());

async function apiError(p: Promise<unknown>): Promise<HeraldApiError> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(HeraldApiError);
  return err as HeraldApiError;
}

describe('HeraldClient', () => {
  it('changes queue settings, manages schedules and lists workers', async () => {
    expect(await admin.patchQueue('client-q', { concurrency: 2, rateLimit: { count: 5, periodMs: 1000 } })).toMatchObject({
      queue: 'client-q', paused: false, concurrency: 2, groupConcurrency: null, rateLimit: { count: 5, periodMs: 1000 },
      updatedBy: { role: 'admin' }, updatedAt: expect.any(String),
    });
    expect((await admin.queues()).find((q) => q.queue === 'client-q')).toMatchObject({ concurrency: 2 });
    expect((await apiError(producer.patchQueue('client-q', { paused: true }))).statusCode).toBe(403);
    const bad = await apiError(admin.patchQueue('client-q', { concurrency: 0 }));
    expect(bad.message).toMatch(/^concurrency must be an integer from 1 to 10000/);

    const put = await admin.putSchedule('client-s', { cron: '0 * * * *', job: { kind: 'echo' } });
    expect(put).toMatchObject({ created: true, schedule: { name: 'client-s', timezone: 'UTC', nextRunAt: expect.any(String) } });
    expect((await admin.putSchedule('client-s', { cron: '30 * * * *', job: { kind: 'echo' } })).created).toBe(false);
    expect((await admin.schedules()).map((x) => x.cron)).toEqual(['30 * * * *']);
    const job = await admin.runSchedule('client-s');
    expect(job).toMatchObject({ kind: 'echo', status: 'queued' });
    await admin.deleteSchedule('client-s');
    expect(await admin.schedules()).toEqual([]);
    expect((await apiError(admin.deleteSchedule('client-s'))).statusCode).toBe(404);
    expect((await apiError(admin.putSchedule('x', { cron: 'nope', job: { kind: 'echo' } }))).message).toMatch(/^cron "nope" has 1 field/);
    expect(Array.isArray(await admin.workers())).toBe(true);
  });

  it('enqueues, with idempotency keys and Date runAt', async () => {
    const runAt = new Date(Date.now() + 3_600_000);
    const a = await producer.enqueue({ kind: 'mail', payload: { to: 'a@b' }, runAt, priority: 5 }, { idempotencyKey: 'mail-1' });
    expect(a).toMatchObject({ created: true, pending: false, job: { kind: 'mail', priority: 5, runAt: runAt.toISOString(), idempotencyKey: 'mail-1' } });
    const b = await producer.enqueue({ kind: 'mail', payload: { to: 'a@b' }, runAt }, { idempotencyKey: 'mail-1' });
    expect(b).toMatchObject({ created: false, job: { id: a.job.id } });
    const conflict = await apiError(producer.enqueue({ kind: 'mail', payload: { to: 'c@d' }, idempotencyKey: 'mail-1' }));
    expect(conflict.statusCode).toBe(409);
    expect(conflict.message).toMatch(/already made job/);
  });

  it('asks a token getter before every call, reports error replies to onError, and aborts a call by its signal', async () => {
    let token: string | null = null;
    const seen: number[] = [];
    const page = new HeraldClient({ baseUrl: s.url, token: () => token, onError: (e) => seen.push(e.statusCode) });
    expect((await apiError(page.queues())).statusCode).toBe(401);
    token = TOKENS.admin;
    expect(Array.isArray(await page.queues())).toBe(true);
    expect(seen).toEqual([401]);
    const aborted = new AbortController();
    aborted.abort();
    const err = await page.list({}, { signal: aborted.signal }).then(() => null, (e: unknown) => e);
    expect(err).toMatchObject({ name: 'AbortError' });
    expect(seen).toEqual([401]);
  });

  it('throws HeraldApiError with the status and the server message', async () => {
    const bad = await apiError(producer.enqueue({ kind: 'no spaces' }));
    expect(bad).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(bad.message).toMatch(/^kind must be 1-128/);
    expect((await apiError(producer.get('987654'))).statusCode).toBe(404);
    expect((await apiError(producer.cancel('1'))).statusCode).toBe(403);
    expect((await apiError(new HeraldClient({ baseUrl: s.url }).list())).statusCode).toBe(401);
    expect((await apiError(new HeraldClient({ baseUrl: s.url, token: 'wrong' }).queues())).statusCode).toBe(401);
  });

  it('enqueues a batch, lists with paging, reads a job and its events', async () => {
    const jobs = await producer.enqueueBatch(Array.from({ length: 5 }, (_, i) => ({ kind: 'batch', queue: 'cq', payload: { i } })));
    expect(jobs.map((j) => (j.payload as { i: number }).i)).toEqual([0, 1, 2, 3, 4]);
    const page1 = await producer.list({ queue: 'cq', limit: 3 });
    expect(page1.jobs.map((j) => j.id)).toEqual([jobs[4].id, jobs[3].id, jobs[2].id]);
    const page2 = await producer.list({ queue: 'cq', limit: 3, before: page1.next! });
    expect(page2).toEqual({ jobs: [expect.objectContaining({ id: jobs[1].id }), expect.objectContaining({ id: jobs[0].id })], next: null });
    expect((await producer.get(jobs[0].id)).kind).toBe('batch');
    expect((await producer.jobEvents(jobs[0].id)).map((e) => e.type)).toEqual(['enqueued']);
    expect((await producer.queues()).find((q) => q.queue === 'cq')).toMatchObject({ queued: 5 });
    const batchError = await apiError(producer.enqueueBatch([{ kind: 'ok' }, { kind: 'bad kind' }]));
    expect(batchError.message).toMatch(/^jobs\[1\]\.kind/);
  });

  it('cancels and retries as admin', async () => {
    const { job } = await producer.enqueue({ kind: 'c' });
    expect((await admin.cancel(job.id)).status).toBe('cancelled');
    expect((await admin.retry(job.id)).status).toBe('queued');
    expect((await apiError(admin.retry(job.id))).statusCode).toBe(409);
  });

  it('waits for a job to end, or says it is still pending', async () => {
    const stop = new AbortController();
    const worker = simulateWorker(s.db.queue, 'cw', stop.signal);
    const done = await producer.enqueue({ kind: 'echo', queue: 'waited' }, { wait: 30_000 });
    stop.abort();
    await worker;
    expect(done).toMatchObject({ created: true, pending: false, job: { status: 'succeeded' } });
    const pending = await producer.enqueue({ kind: 'echo', queue: 'unserved' }, { wait: 100 });
    expect(pending).toMatchObject({ created: true, pending: true, job: { status: 'queued' } });
  });

  it('reports health', async () => {
    expect(await producer.health()).toMatchObject({ ok: true, db: 'up', listener: 'up' });
  });

  it('streams events with filters, and resumes by itself after dropped connections', async () => {
    const stream = new HeraldClient({ baseUrl: s.url, token: TOKENS.viewer }).events({ queue: 'streamed', lastEventId: '0' });
    const seen: StreamEvent[] = [];
    const consuming = (async () => {
      for await (const e of stream) {
        seen.push(e);
        if (seen.length % 7 === 0) stream.reconnect();
        if (seen.length === 40) break;
      }
    })();
    await producer.enqueueBatch(Array.from({ length: 10 }, (_, i) => ({ kind: 'e', queue: i % 2 ? 'streamed' : 'other' })));
    // One event at a time from here, so every drop happens between two events.
    for (let i = seen.length; i < 40; i++) {
      await producer.enqueue({ kind: 'e', queue: 'other' });
      await producer.enqueue({ kind: 'e', queue: 'streamed' });
      await waitFor(() => seen.length > i, { what: 'seen.length > i' });
    }
    await consuming;
    expect(seen).toHaveLength(40);
    expect(seen.every((e) => e.queue === 'streamed' && e.type === 'enqueued')).toBe(true);
    expect(new Set(seen.map((e) => e.eventId)).size).toBe(40);
    expect(stream.reconnects).toBeGreaterThanOrEqual(5);
    expect(stream.lastEventId).toBe(seen[39].id);
    await waitFor(() => s.hub.sessions.size === 0, { what: 's.hub.sessions.size === 0' });
  });

  it('a resumed stream whose missed events retention removed calls onReset, once per removal, and goes on', async () => {
    const viewer = new HeraldClient({ baseUrl: s.url, token: TOKENS.viewer });
    const [kept] = await producer.enqueueBatch([{ kind: 'e', queue: 'kept' }]);
    const resets: string[] = [];
    const stream = viewer.events({ queue: 'kept', lastEventId: '0', onReset: (r) => resets.push(r) });
    const seen: StreamEvent[] = [];
    const done = (async () => {
      for await (const e of stream) seen.push(e);
    })();
    await waitFor(() => seen.length === 1, { what: 'the stream to get the kept job' });
    // While it looks at queue `kept`, jobs of another queue end and retention removes their
    // events: positions after the stream's cursor, which a reconnect resumes from.
    const gone = await producer.enqueueBatch([{ kind: 'e', queue: 'elsewhere' }, { kind: 'e', queue: 'elsewhere' }]);
    for (const j of gone) await admin.cancel(j.id);
    await s.db.queue.cleanup(0);
    const before = resets.length;
    stream.reconnect();
    await waitFor(() => resets.length === before + 1, { what: 'onReset after the reconnect' });
    expect(stream.removedThrough).toBe(resets.at(-1));
    // Told again of the same removal (its cursor is still behind it), the stream knows it already.
    const reconnects = stream.reconnects;
    stream.reconnect();
    await waitFor(() => stream.reconnects > reconnects, { what: 'the second reconnect' });
    // The stream goes on: the kept job's next event still arrives, once.
    await admin.cancel(kept.id);
    await waitFor(() => seen.length === 2, { what: "the kept job's cancelled event" });
    expect(seen.map((e) => e.type)).toEqual(['enqueued', 'cancelled']);
    expect(resets).toHaveLength(before + 1);
    stream.close();
    await done;
  });

  it('rejects a stream it cannot open', async () => {
    const err = await apiError((async () => {
      for await (const _ of new HeraldClient({ baseUrl: s.url }).events()) break;
    })());
    expect(err.statusCode).toBe(401);
  });

  it('searches, runs bulk actions and reads queue history', async () => {
    const made = await producer.enqueueBatch([
      { kind: 'bill', queue: 'client-bulk', payload: { customer: 42 } },
      { kind: 'bill', queue: 'client-bulk', payload: { customer: 7 } },
      { kind: 'bill', queue: 'client-bulk', payload: { customer: 42, vip: true } },
    ]);
    const page = await admin.list({ queue: 'client-bulk', payload: { customer: 42 }, createdAfter: new Date(Date.now() - 3_600_000) });
    expect(page.jobs.map((j) => j.id)).toEqual([made[2].id, made[0].id]);
    expect(page.searched).toBeUndefined();
    expect(await admin.bulk({ action: 'cancel', filter: { queue: 'client-bulk', payload: { customer: 42 } }, dryRun: true })).toEqual({ matched: 2, affected: 2 });
    expect(await admin.bulk({ action: 'cancel', filter: { queue: 'client-bulk', payload: '{"customer":42}' } })).toEqual({ matched: 2, affected: 2 });
    expect((await admin.get(made[1].id)).status).toBe('queued');
    const refused = await apiError(admin.bulk({ action: 'delete', filter: { kind: 'bill' } }));
    expect(refused).toMatchObject({ statusCode: 400, message: expect.stringMatching(/must name a queue, a status or a flow/) });
    await rollupAll(s.queue, s.db.pool);
    const history = await admin.queueStats('client-bulk', '24h');
    expect(history).toHaveLength(96);
    expect(history.reduce((n, b) => n + b.enqueued, 0)).toBe(3);
  });
});

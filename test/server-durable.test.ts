// The durable routes: a job's steps (viewer) and the signals sent to it (producer), with their
// 4xx replies changing nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DurableService } from '../queue/services/durable.ts';
import { HeraldClient } from '../client/index.ts';
import { suspendedJob, TOKEN_SPEC, TOKENS, testServer, type TestServer } from './server-support.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer({ tokens: TOKEN_SPEC, listen: true });
});
afterAll(() => s.close());

const producer = { authorization: `Bearer ${TOKENS.producer}` };
const viewer = { authorization: `Bearer ${TOKENS.viewer}` };
const signals = async (id: string) =>
  (await s.db.pool.query(`SELECT name, payload, timed_out FROM herald.job_signals WHERE job_id = $1 ORDER BY name`, [id])).rows;

describe('POST /api/jobs/:id/signals/:name', () => {
  it('keeps a signal for a job that does not wait yet (202, woken false), then refuses a second one with 409 and keeps the first', async () => {
    const { job } = await s.queue.enqueue({ kind: 'k' });
    const first = await s.app.inject({ method: 'POST', url: `/api/jobs/${job.id}/signals/approve`, headers: producer, payload: { payload: { ok: true } } });
    expect(first.statusCode, first.body).toBe(202);
    expect(first.json()).toEqual({ jobId: job.id, name: 'approve', woken: false });
    const again = await s.app.inject({ method: 'POST', url: `/api/jobs/${job.id}/signals/approve`, headers: producer, payload: { payload: { ok: false } } });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'HERALD_SIGNAL_SENT' });
    expect(await signals(job.id)).toEqual([{ name: 'approve', payload: { ok: true }, timed_out: false }]);
    const events = (await s.queue.events(job.id)).map((e) => [e.type, e.data]);
    expect(events.filter(([t]) => t === 'signalled')).toEqual([['signalled', { name: 'approve', by: { role: 'producer' } }]]);
  });

  it('takes an empty body as a null payload', async () => {
    const { job } = await s.queue.enqueue({ kind: 'k' });
    const res = await s.app.inject({ method: 'POST', url: `/api/jobs/${job.id}/signals/go`, headers: { ...producer, 'content-type': 'application/json' }, payload: '{}' });
    expect(res.statusCode, res.body).toBe(202);
    expect(await signals(job.id)).toEqual([{ name: 'go', payload: null, timed_out: false }]);
  });

  it('refuses bad input with a 4xx that changes nothing', async () => {
    const { job } = await s.queue.enqueue({ kind: 'k' });
    const cases: [string, Record<string, string>, unknown, number, string][] = [
      [`/api/jobs/${job.id}/signals/no%20spaces`, producer, {}, 400, 'HERALD_VALIDATION'],
      [`/api/jobs/${job.id}/signals/${'n'.repeat(129)}`, producer, {}, 400, 'HERALD_VALIDATION'],
      [`/api/jobs/${job.id}/signals/ok`, producer, { payload: 1, extra: true }, 400, 'HERALD_VALIDATION'],
      [`/api/jobs/abc/signals/ok`, producer, {}, 400, 'HERALD_VALIDATION'],
      [`/api/jobs/${job.id}/signals/ok`, viewer, {}, 403, 'HERALD_FORBIDDEN'],
      ['/api/jobs/987654321/signals/ok', producer, {}, 404, 'HERALD_NOT_FOUND'],
    ];
    for (const [url, headers, payload, status, code] of cases) {
      const res = await s.app.inject({ method: 'POST', url, headers, payload: payload as object });
      expect([res.statusCode, res.json().code], url).toEqual([status, code]);
    }
    await s.queue.cancel(job.id);
    const ended = await s.app.inject({ method: 'POST', url: `/api/jobs/${job.id}/signals/ok`, headers: producer, payload: {} });
    expect([ended.statusCode, ended.json().code]).toEqual([409, 'HERALD_SIGNAL_SENT']);
    expect(ended.json().message).toMatch(/has ended \(cancelled\)/);
    expect(await signals(job.id)).toEqual([]);
    expect((await s.queue.events(job.id)).map((e) => e.type)).toEqual(['enqueued', 'cancelled']);
  });
});

describe('GET /api/jobs/:id/steps', () => {
  it("lists a job's stored steps in the order they finished; none for a plain job; 404 for an unknown one", async () => {
    const { job } = await s.queue.enqueue({ kind: 'k', queue: 'steps' });
    const [claimed] = await s.queue.claim({ worker: 'w:1:steps', queues: ['steps'], limit: 1 });
    const durable = new DurableService(s.queue.db);
    expect(await durable.saveSteps('w:1:steps', [{ lease: claimed, name: 'charge', occurrence: 0, json: '{"receipt":"r1"}', ms: 12 }])).toEqual([true]);
    expect(await durable.saveSteps('w:1:steps', [{ lease: claimed, name: 'ship', occurrence: 0, json: '7', ms: 3 }])).toEqual([true]);
    const client = new HeraldClient({ baseUrl: s.url, token: TOKENS.viewer });
    const steps = await client.steps(job.id);
    expect(steps).toEqual([
      { name: 'charge', occurrence: 0, attempt: 1, startedAt: expect.any(String), finishedAt: expect.any(String), ms: 12, result: { receipt: 'r1' } },
      { name: 'ship', occurrence: 0, attempt: 1, startedAt: expect.any(String), finishedAt: expect.any(String), ms: 3, result: 7 },
    ]);
    const { job: plain } = await s.queue.enqueue({ kind: 'k' });
    expect(await client.steps(plain.id)).toEqual([]);
    const missing = await s.app.inject({ method: 'GET', url: '/api/jobs/987654321/steps', headers: viewer });
    expect([missing.statusCode, missing.json().code]).toEqual([404, 'HERALD_NOT_FOUND']);
  });

  it('the client sends a signal and gets its reply', async () => {
    const { job } = await s.queue.enqueue({ kind: 'k' });
    const client = new HeraldClient({ baseUrl: s.url, token: TOKENS.producer });
    expect(await client.signal(job.id, 'approve', { by: 'ann' })).toEqual({ jobId: job.id, name: 'approve', woken: false });
    await expect(client.signal(job.id, 'approve')).rejects.toMatchObject({ statusCode: 409, code: 'HERALD_SIGNAL_SENT' });
  });
});

describe('GET /api/jobs?waitingFor=', () => {
  // Mutation caught: the filter without `available_at > now()` (a job its signal woke still listed).
  it('lists the jobs whose handler waits for a signal, sleeps or waits for a child, newest first; a woken or cancelled job leaves the list', async () => {
    const q = 'waiting-filter';
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const a = await suspendedJob(s.queue, q, { type: 'signal', name: 'approve', until });
    const sleeper = await suspendedJob(s.queue, q, { type: 'sleep', until });
    const b = await suspendedJob(s.queue, q, { type: 'signal', name: 'approve' });
    const parent = await suspendedJob(s.queue, q, { type: 'child' });
    await s.queue.enqueue({ kind: 'plain', queue: q, runAt: until }); // scheduled, but no handler waits
    const client = new HeraldClient({ baseUrl: s.url, token: TOKENS.viewer });
    const ids = async (f: Parameters<HeraldClient['list']>[0]) => (await client.list(f)).jobs.map((j) => j.id);
    expect(await ids({ queue: q, waitingFor: 'signal' })).toEqual([b, a]);
    expect(await ids({ waitingFor: 'signal' })).toEqual([b, a]);
    expect(await ids({ queue: q, waitingFor: 'sleep' })).toEqual([sleeper]);
    expect(await ids({ queue: q, waitingFor: 'child' })).toEqual([parent]);
    expect(await ids({ queue: q, status: 'scheduled', waitingFor: 'signal' })).toEqual([b, a]);
    expect(await ids({ queue: q, status: 'running', waitingFor: 'signal' })).toEqual([]);
    const [listed] = (await client.list({ queue: q, waitingFor: 'signal', limit: 1 })).jobs;
    expect(listed).toMatchObject({ id: b, status: 'queued', waitingFor: 'signal', wait: { type: 'signal', name: 'approve' } });

    const res = await s.app.inject({ method: 'POST', url: `/api/jobs/${a}/signals/approve`, headers: producer, payload: { payload: { approved: true } } });
    expect(res.json()).toMatchObject({ woken: true });
    await s.queue.cancel(b);
    expect(await ids({ queue: q, waitingFor: 'signal' })).toEqual([]);

    const bad = await s.app.inject({ method: 'GET', url: '/api/jobs?waitingFor=scheduled', headers: viewer });
    expect([bad.statusCode, bad.json().code]).toEqual([400, 'HERALD_VALIDATION']);
  });
});

// Dead letters over HTTP: the setting on PATCH /api/queues/:queue and GET /api/queues, the copy
// in the Job JSON (deadLetterOf), and the bulk action redrive. Replies are checked against the
// OpenAPI document by testServer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testServer, type TestServer } from './server-support.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer();
});
afterAll(() => s.close());

const inject = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => s.app.inject({ method, url, ...(payload ? { payload } : {}) });

describe('dead-letter queues over HTTP', () => {
  it('sets, shows and clears deadLetter; a bad one is a 400 that changes nothing', async () => {
    const set = await inject('PATCH', '/api/queues/mail', { deadLetter: 'mail.dead' });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toMatchObject({ queue: 'mail', deadLetter: 'mail.dead' });
    expect((await inject('GET', '/api/queues')).json().queues).toContainEqual(expect.objectContaining({ queue: 'mail', deadLetter: 'mail.dead' }));
    for (const bad of [{ deadLetter: 'mail' }, { deadLetter: 'no spaces' }]) {
      const r = await inject('PATCH', '/api/queues/mail', bad);
      expect(r.statusCode, JSON.stringify(bad)).toBe(400);
    }
    expect((await inject('PATCH', '/api/queues/mail', { deadLetter: 'mail' })).json().message).toMatch(/^deadLetter must name another queue/);
    expect((await inject('GET', '/api/queues')).json().queues).toContainEqual(expect.objectContaining({ queue: 'mail', deadLetter: 'mail.dead' }));
    expect((await inject('PATCH', '/api/queues/mail', { deadLetter: null })).json().deadLetter).toBeNull();
  });

  it('a job that fails for good shows its copy; redrive sends the copy back as a new job', async () => {
    await inject('PATCH', '/api/queues/billing', { deadLetter: 'billing.dead' });
    const job = (await inject('POST', '/api/jobs', { kind: 'charge', queue: 'billing', payload: { n: 1 }, maxAttempts: 1 })).json();
    expect(job.deadLetterOf).toBeNull();
    const [claimed] = await s.queue.claim({ worker: 'w:1:x', queues: ['billing'], limit: 1 });
    await s.queue.fail('w:1:x', [{ id: claimed.id, attempt: 1, error: new Error('nope') }]);

    const failed = (await inject('GET', `/api/jobs/${job.id}/events`)).json().events.at(-1);
    expect(failed).toMatchObject({ type: 'failed', data: { deadLetter: { queue: 'billing.dead' } } });
    const copyId = failed.data.deadLetter.jobId as string;
    expect((await inject('GET', `/api/jobs/${copyId}`)).json()).toMatchObject({ queue: 'billing.dead', kind: 'charge', payload: { n: 1 }, deadLetterOf: job.id });

    const dry = await inject('POST', '/api/jobs/bulk', { action: 'redrive', filter: { queue: 'billing.dead' }, dryRun: true });
    expect(dry.json()).toEqual({ matched: 1 });
    const done = await inject('POST', '/api/jobs/bulk', { action: 'redrive', filter: { queue: 'billing.dead' } });
    expect(done.json()).toEqual({ matched: 1, affected: 1 });
    const copy = (await inject('GET', `/api/jobs/${copyId}`)).json();
    expect(copy).toMatchObject({ status: 'cancelled', lastError: { reason: 'redriven' } });
    expect((await inject('GET', `/api/jobs/${copy.lastError.jobId}`)).json()).toMatchObject({ queue: 'billing', kind: 'charge', status: 'queued', deadLetterOf: null });
  });
});

// Every route's success and each of its rejections, through fastify.inject on a real database.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { testServer, type TestServer } from './server-support.ts';
import { ERROR_CODES, type ErrorCode } from '../queue/errors.ts';

let s: TestServer;
beforeAll(async () => void (s = await testServer()));
afterAll(() => s.close());
beforeEach(async () => {
  await s.db.pool.query('TRUNCATE herald.jobs, herald.job_events, herald.queues, herald.workers RESTART IDENTITY');
});

const post = (url: string, payload?: unknown, headers: Record<string, string> = {}) =>
  s.app.inject({ method: 'POST', url, payload: payload as object, headers });
const get = (url: string) => s.app.inject({ method: 'GET', url });
const jobCount = async () => (await s.db.pool.query('SELECT count(*)::int AS n FROM herald.jobs')).rows[0].n;

/** A 4xx with Fastify's error shape, the code's status and the code, and a message matching `text`; and nothing was written. */
async function rejected(res: Awaited<ReturnType<typeof get>>, code: ErrorCode, text: RegExp) {
  const status = ERROR_CODES[code].status;
  expect(res.statusCode, res.body).toBe(status);
  const body = res.json();
  expect(body).toEqual({ statusCode: status, error: expect.any(String), message: expect.stringMatching(text), code });
  expect(res.body).not.toMatch(/\n\s+at |node_modules/);
}

describe('POST /api/jobs', () => {
  it('creates a job with the contract shape', async () => {
    const res = await post('/api/jobs', { kind: 'echo', payload: { a: [1, 'x'] }, priority: 3, requires: ['gpu'], maxAttempts: 2 });
    expect(res.statusCode).toBe(201);
    expect(res.headers['herald-job-created']).toBe('true');
    const job = res.json();
    expect(job).toEqual({
      id: '1', queue: 'default', kind: 'echo', payload: { a: [1, 'x'] }, priority: 3, status: 'queued', attempt: 0,
      maxAttempts: 2, requires: ['gpu'], idempotencyKey: null, runAt: expect.any(String), createdAt: expect.any(String),
      startedAt: null, finishedAt: null, lockedBy: null, leaseExpiresAt: null, cancelRequested: false, progress: null,
      result: null, lastError: null, group: null, tags: [], timeoutMs: null, expireAt: null, deadLetterOf: null, flowId: null, ref: null, dependsOn: [], onParentFailure: null, waitingFor: 'no_worker', wait: null, invokedBy: null,
    });
    expect(new Date(job.runAt).toISOString()).toBe(job.runAt);
  });

  it('takes group, tags, timeoutMs and expireAt, and shows them on the job', async () => {
    const body = { kind: 'k', group: 'tenant:42', tags: ['billing', 'eu-west.1'], timeoutMs: 1500, expireAt: '2031-01-01T01:00:00+01:00' };
    const res = await post('/api/jobs', body);
    expect(res.statusCode, res.body).toBe(201);
    // No worker runs in this test: waitingFor says so.
    const expected = { group: 'tenant:42', tags: ['billing', 'eu-west.1'], timeoutMs: 1500, expireAt: '2031-01-01T00:00:00.000Z', waitingFor: 'no_worker' };
    expect(res.json()).toMatchObject(expected);
    expect((await get(`/api/jobs/${res.json().id}`)).json()).toMatchObject(expected);
    const batch = await post('/api/jobs/batch', { jobs: [{ kind: 'k' }, { kind: 'k', tags: Array(17).fill('t') }] });
    await rejected(batch, 'HERALD_VALIDATION', /^jobs\[1\]\.tags must be a list of at most 16 tags.*\(job 1 of the batch; nothing was enqueued\)/);
    expect(await jobCount()).toBe(1);
  });

  it('takes runAt and a queue', async () => {
    const runAt = '2031-05-06T07:08:09.000Z';
    const job = (await post('/api/jobs', { kind: 'k', queue: 'mail.out:1', runAt: '2031-05-06T09:08:09+02:00' })).json();
    expect(job).toMatchObject({ queue: 'mail.out:1', runAt });
    const queues = (await get('/api/queues')).json();
    expect(queues.queues).toEqual([{ queue: 'mail.out:1', queued: 0, scheduled: 1, running: 0, succeeded: 0, failed: 0, cancelled: 0, blocked: 0, paused: false, concurrency: null, groupConcurrency: null, rateLimit: null, deadLetter: null, updatedBy: null, updatedAt: null }]);
  });

  const invalid: [string, unknown, RegExp][] = [
    ['kind missing', {}, /^kind is required/],
    ['kind empty', { kind: '' }, /^kind must be 1-128 characters of \[A-Za-z0-9_.:-\]/],
    ['kind too long', { kind: 'k'.repeat(129) }, /^kind must be 1-128/],
    ['kind bad characters', { kind: 'no spaces' }, /^kind must be 1-128/],
    ['kind not a string', { kind: { a: 1 } }, /^kind must be 1-128/],
    ['queue bad characters', { kind: 'k', queue: 'a/b' }, /^queue must be 1-128/],
    ['queue too long', { kind: 'k', queue: 'q'.repeat(129) }, /^queue must be 1-128/],
    ['queue empty', { kind: 'k', queue: '' }, /^queue must be 1-128/],
    ['priority too high', { kind: 'k', priority: 32768 }, /^priority must be an integer from -32768 to 32767/],
    ['priority too low', { kind: 'k', priority: -32769 }, /^priority must be an integer/],
    ['priority fractional', { kind: 'k', priority: 1.5 }, /^priority must be an integer/],
    ['maxAttempts 0', { kind: 'k', maxAttempts: 0 }, /^maxAttempts must be an integer from 1 to 1000/],
    ['maxAttempts 1001', { kind: 'k', maxAttempts: 1001 }, /^maxAttempts must be/],
    ['requires 33 tags', { kind: 'k', requires: Array.from({ length: 33 }, (_, i) => `t${i}`) }, /^requires must be a list of at most 32 tags/],
    ['requires not strings', { kind: 'k', requires: [{}] }, /^requires\[0\] must be a list of at most 32 tags/],
    ['runAt not a date', { kind: 'k', runAt: 'tomorrow' }, /^runAt must be an ISO 8601 date-time/],
    ['runAt without zone', { kind: 'k', runAt: '2030-01-01T00:00:00' }, /^runAt must be an ISO 8601/],
    ['idempotencyKey too long', { kind: 'k', idempotencyKey: 'x'.repeat(256) }, /^idempotencyKey must be a string of 1-255/],
    ['group bad characters', { kind: 'k', group: 'a b' }, /^group must be 1-128 characters/],
    ['group empty', { kind: 'k', group: '' }, /^group must be 1-128/],
    ['17 tags', { kind: 'k', tags: Array.from({ length: 17 }, (_, i) => `t${i}`) }, /^tags must be a list of at most 16 tags/],
    ['a bad tag', { kind: 'k', tags: ['ok', 'not ok'] }, /^tags\[1\] must be a list of at most 16 tags, each 1-128/],
    ['timeoutMs 0', { kind: 'k', timeoutMs: 0 }, /^timeoutMs must be an integer number of milliseconds from 1 to 86400000/],
    ['timeoutMs over a day', { kind: 'k', timeoutMs: 86_400_001 }, /^timeoutMs must be/],
    ['timeoutMs fractional', { kind: 'k', timeoutMs: 1.5 }, /^timeoutMs must be/],
    ['expireAt not a date', { kind: 'k', expireAt: 'soon' }, /^expireAt must be an ISO 8601 date-time/],
    ['unknown field', { kind: 'k', max_attempts: 3 }, /^body field "max_attempts" is not allowed/],
    ['not an object', [1, 2], /^the body must be a JSON object/],
  ];
  it.each(invalid)('rejects %s with 400 and writes nothing', async (_name, body, message) => {
    await rejected(await post('/api/jobs', body), 'HERALD_VALIDATION', message);
    expect(await jobCount()).toBe(0);
  });

  it('rejects bad JSON, a wrong content type and \\u0000 in the payload', async () => {
    await rejected(await s.app.inject({ method: 'POST', url: '/api/jobs', payload: '{"kind":', headers: { 'content-type': 'application/json' } }), 'HERALD_INVALID_JSON', /JSON/);
    await rejected(await s.app.inject({ method: 'POST', url: '/api/jobs', payload: 'kind=x', headers: { 'content-type': 'text/plain' } }), 'HERALD_UNSUPPORTED_MEDIA_TYPE', /text\/plain/);
    await rejected(
      await s.app.inject({ method: 'POST', url: '/api/jobs', payload: '{"kind":"x","payload":"\\u0000"}', headers: { 'content-type': 'application/json' } }),
      'HERALD_VALIDATION',
      /invalid value/,
    );
    expect(await jobCount()).toBe(0);
  });

  it('rejects a body over 1 MiB with 413', async () => {
    const big = { kind: 'k', payload: { blob: 'x'.repeat(1024 * 1024) } };
    await rejected(await post('/api/jobs', big), 'HERALD_BODY_TOO_LARGE', /larger than 1 MiB/);
    const batch = { jobs: Array.from({ length: 600 }, () => ({ kind: 'k', payload: { blob: 'y'.repeat(2000) } })) };
    await rejected(await post('/api/jobs/batch', batch), 'HERALD_BODY_TOO_LARGE', /larger than 1 MiB/);
    expect(await jobCount()).toBe(0);
  });

  it('rejects ?wait out of range', async () => {
    await rejected(await post('/api/jobs?wait=60001', { kind: 'k' }), 'HERALD_VALIDATION', /^wait must be a whole number of milliseconds from 0 to 60000/);
    await rejected(await post('/api/jobs?wait=-1', { kind: 'k' }), 'HERALD_VALIDATION', /^wait must be/);
    await rejected(await post('/api/jobs?wait=soon', { kind: 'k' }), 'HERALD_VALIDATION', /^wait must be/);
    expect(await jobCount()).toBe(0);
  });
});

describe('idempotency', () => {
  it('returns 201, then 200 with the same job, then 409 for a different job under the key', async () => {
    const first = await post('/api/jobs', { kind: 'echo', payload: { a: 1, b: 2 } }, { 'idempotency-key': 'order-7' });
    expect(first.statusCode).toBe(201);
    expect(first.json().idempotencyKey).toBe('order-7');
    // The body field works like the header; key order in the payload does not matter.
    const again = await post('/api/jobs', { kind: 'echo', payload: { b: 2, a: 1 }, idempotencyKey: 'order-7' });
    expect(again.statusCode).toBe(200);
    expect(again.headers['herald-job-created']).toBe('false');
    expect(again.json().id).toBe(first.json().id);
    for (const other of [{ kind: 'echo', payload: { a: 2 } }, { kind: 'mail', payload: { a: 1, b: 2 } }, { kind: 'echo', queue: 'q2', payload: { a: 1, b: 2 } }]) {
      await rejected(await post('/api/jobs', other, { 'idempotency-key': 'order-7' }), 'HERALD_CONFLICT_IDEMPOTENCY', /idempotency key "order-7" already made job 1/);
    }
    expect(await jobCount()).toBe(1);
  });

  it('rejects a header and a body field that differ', async () => {
    await rejected(await post('/api/jobs', { kind: 'k', idempotencyKey: 'a' }, { 'idempotency-key': 'b' }), 'HERALD_VALIDATION', /Idempotency-Key header and the idempotencyKey field differ/);
    expect((await post('/api/jobs', { kind: 'k', idempotencyKey: 'a' }, { 'idempotency-key': 'a' })).statusCode).toBe(201);
    expect(await jobCount()).toBe(1);
  });

  it('rejects an empty or too long header', async () => {
    await rejected(await post('/api/jobs', { kind: 'k' }, { 'idempotency-key': 'x'.repeat(256) }), 'HERALD_VALIDATION', /^the Idempotency-Key header must be 1-255 characters/);
    expect(await jobCount()).toBe(0);
  });
});

describe('POST /api/jobs/batch', () => {
  it('creates all jobs in order', async () => {
    const jobs = Array.from({ length: 1000 }, (_, i) => ({ kind: `k${i % 7}`, payload: { i } }));
    const res = await post('/api/jobs/batch', { jobs });
    expect(res.statusCode).toBe(201);
    expect(res.json().jobs.map((j: { payload: { i: number } }) => j.payload.i)).toEqual(jobs.map((j) => j.payload.i));
    expect(await jobCount()).toBe(1000);
  });

  it('rejects the whole batch, naming the bad index, and writes nothing', async () => {
    const jobs = [{ kind: 'ok' }, { kind: 'ok' }, { kind: 'ok' }, { kind: 'bad kind' }, { kind: 'ok' }];
    await rejected(await post('/api/jobs/batch', { jobs }), 'HERALD_VALIDATION', /^jobs\[3\]\.kind must be 1-128 .*job 3 of the batch; nothing was enqueued/);
    await rejected(await post('/api/jobs/batch', { jobs: [{ kind: 'a' }, { priority: 1 }] }), 'HERALD_VALIDATION', /^jobs\[1\]\.kind is required \(job 1/);
    await rejected(await post('/api/jobs/batch', { jobs: [{ kind: 'a' }, { kind: 'b', maxAttempts: 0 }] }), 'HERALD_VALIDATION', /^jobs\[1\]\.maxAttempts must be/);
    expect(await jobCount()).toBe(0);
  });

  it('rejects an empty batch, more than 1000 jobs and a missing list', async () => {
    await rejected(await post('/api/jobs/batch', { jobs: [] }), 'HERALD_VALIDATION', /^jobs must be a list of 1 to 1000 jobs/);
    await rejected(await post('/api/jobs/batch', { jobs: Array.from({ length: 1001 }, () => ({ kind: 'k' })) }), 'HERALD_VALIDATION', /^jobs must be a list of 1 to 1000/);
    await rejected(await post('/api/jobs/batch', {}), 'HERALD_VALIDATION', /^jobs is required/);
    expect(await jobCount()).toBe(0);
  });

  it('409s a batch that reuses a key for a different job, writing nothing', async () => {
    await post('/api/jobs', { kind: 'k', idempotencyKey: 'once' });
    await rejected(await post('/api/jobs/batch', { jobs: [{ kind: 'fresh' }, { kind: 'other', idempotencyKey: 'once' }] }), 'HERALD_CONFLICT_IDEMPOTENCY', /idempotency key "once"/);
    expect(await jobCount()).toBe(1);
  });
});

describe('reading jobs', () => {
  it('lists newest first, filters, and pages with before/next', async () => {
    await post('/api/jobs/batch', { jobs: Array.from({ length: 7 }, (_, i) => ({ kind: i % 2 ? 'odd' : 'even', queue: i < 4 ? 'a' : 'b' })) });
    const all = (await get('/api/jobs')).json();
    expect(all.jobs.map((j: { id: string }) => j.id)).toEqual(['7', '6', '5', '4', '3', '2', '1']);
    expect(all.next).toBeNull();
    const page1 = (await get('/api/jobs?limit=3')).json();
    expect(page1.jobs.map((j: { id: string }) => j.id)).toEqual(['7', '6', '5']);
    expect(page1.next).toBe('5');
    const page2 = (await get(`/api/jobs?limit=3&before=${page1.next}`)).json();
    expect(page2.jobs.map((j: { id: string }) => j.id)).toEqual(['4', '3', '2']);
    expect((await get('/api/jobs?queue=a&kind=odd')).json().jobs.map((j: { id: string }) => j.id)).toEqual(['4', '2']);
    expect((await get('/api/jobs?status=succeeded')).json().jobs).toEqual([]);
  });

  const badQueries: [string, RegExp][] = [
    ['limit=0', /^limit must be an integer from 1 to 500/],
    ['limit=501', /^limit must be/],
    ['limit=-1', /^limit must be/],
    ['limit=ten', /^limit must be/],
    ['before=abc', /^before must be a job id/],
    ['status=done', /^status must be one of queued, running, succeeded, failed, cancelled, blocked, scheduled/],
    ['queue=a%20b', /^queue must be 1-128/],
    ['colour=red', /^query parameter "colour" is not allowed/],
  ];
  it.each(badQueries)('rejects ?%s with 400', async (query, message) => {
    await rejected(await get(`/api/jobs?${query}`), 'HERALD_VALIDATION', message);
  });

  it('gets one job and its events; 404 for a missing one; 400 for a bad id', async () => {
    const { id } = (await post('/api/jobs', { kind: 'k' })).json();
    expect((await get(`/api/jobs/${id}`)).json().id).toBe(id);
    const events = (await get(`/api/jobs/${id}/events`)).json().events;
    expect(events).toEqual([
      { eventId: expect.any(String), jobId: id, queue: 'default', kind: 'k', type: 'enqueued', status: 'queued', attempt: 0, worker: null, at: expect.any(String), data: expect.any(Object), flowId: null },
    ]);
    await rejected(await get('/api/jobs/424242'), 'HERALD_NOT_FOUND', /^job 424242 does not exist/);
    await rejected(await get('/api/jobs/424242/events'), 'HERALD_NOT_FOUND', /^job 424242 does not exist/);
    await rejected(await get('/api/jobs/9999999999999999999'), 'HERALD_NOT_FOUND', /does not exist/);
    await rejected(await get('/api/jobs/abc'), 'HERALD_VALIDATION', /^id must be a job id \(digits\)/);
    await rejected(await get('/api/jobs/-1/events'), 'HERALD_VALIDATION', /^id must be a job id/);
    await rejected(await get('/api/jobs/99999999999999999999999'), 'HERALD_VALIDATION', /^id must be a job id/);
  });

  it("pages a job's events: ?after=EVENTID&limit (1..1000, default 1000) -> {events, next}, oldest first", async () => {
    const { id } = (await post('/api/jobs', { kind: 'k' })).json();
    // 2,500 more events of the job (a long history, as a handler reporting per item would make).
    await s.db.pool.query(
      `INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, data)
       SELECT $1, 'default', 'k', 'progress', 'queued', 0, jsonb_build_object('n', n) FROM generate_series(1, 2500) n`,
      [id],
    );
    const seen: string[] = [];
    const sizes: number[] = [];
    let url = `/api/jobs/${id}/events`;
    for (;;) {
      const res = await get(url);
      expect(res.statusCode, res.body).toBe(200);
      const { events, next } = res.json();
      sizes.push(events.length);
      seen.push(...events.map((e: { eventId: string }) => e.eventId));
      if (next === null) break;
      expect(next).toBe(events.at(-1).eventId);
      url = `/api/jobs/${id}/events?after=${next}`;
    }
    expect(sizes).toEqual([1000, 1000, 501]);
    expect(seen.map(Number)).toEqual([...seen.map(Number)].sort((a, b) => a - b));
    expect(new Set(seen).size).toBe(2501);
    const small = (await get(`/api/jobs/${id}/events?limit=2&after=${seen[0]}`)).json();
    expect(small).toEqual({ events: [expect.objectContaining({ eventId: seen[1] }), expect.objectContaining({ eventId: seen[2] })], next: seen[2] });
    expect((await get(`/api/jobs/${id}/events?after=${seen.at(-1)}`)).json()).toEqual({ events: [], next: null });
    expect((await get(`/api/jobs/${id}/events?after=9999999999999999999`)).json()).toEqual({ events: [], next: null });
    await rejected(await get(`/api/jobs/${id}/events?limit=0`), 'HERALD_VALIDATION', /^limit must be an integer from 1 to 500 \(to 1000 for a job's events/);
    await rejected(await get(`/api/jobs/${id}/events?limit=1001`), 'HERALD_VALIDATION', /^limit must be an integer from 1 to 500 \(to 1000 for a job's events/);
    await rejected(await get(`/api/jobs/${id}/events?after=x`), 'HERALD_VALIDATION', /^after must be an event id \(digits\)/);
    await rejected(await get(`/api/jobs/${id}/events?before=1`), 'HERALD_VALIDATION', /query parameter "before" is not allowed/);
  });
});

describe('cancel and retry', () => {
  it('cancels a queued job, 409s a finished one, 404s a missing one', async () => {
    const { id } = (await post('/api/jobs', { kind: 'k' })).json();
    const cancelled = await post(`/api/jobs/${id}/cancel`);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json()).toMatchObject({ id, status: 'cancelled', cancelRequested: true });
    await rejected(await post(`/api/jobs/${id}/cancel`), 'HERALD_JOB_NOT_CANCELLABLE', /already cancelled/);
    await rejected(await post('/api/jobs/777/cancel'), 'HERALD_NOT_FOUND', /job 777 does not exist/);
    await rejected(await post('/api/jobs/x7/cancel'), 'HERALD_VALIDATION', /^id must be a job id/);
  });

  it('asks a running job to cancel', async () => {
    const { id } = (await post('/api/jobs', { kind: 'k' })).json();
    await s.queue.claim({ worker: 'w1', limit: 1 });
    const res = await post(`/api/jobs/${id}/cancel`);
    expect(res.json()).toMatchObject({ status: 'running', cancelRequested: true });
  });

  it('retries a failed or cancelled job, 409s a queued one', async () => {
    const { id } = (await post('/api/jobs', { kind: 'k', maxAttempts: 1 })).json();
    await rejected(await post(`/api/jobs/${id}/retry`), 'HERALD_JOB_NOT_RETRYABLE', /is queued; only failed or cancelled jobs can be retried/);
    const [job] = await s.queue.claim({ worker: 'w1', limit: 1 });
    await s.queue.fail('w1', [{ id, attempt: job.attempt, error: new Error('boom') }]);
    const retried = await post(`/api/jobs/${id}/retry`);
    expect(retried.statusCode).toBe(200);
    expect(retried.json()).toMatchObject({ status: 'queued', maxAttempts: 2 });
    await rejected(await post('/api/jobs/555/retry'), 'HERALD_NOT_FOUND', /does not exist/);
  });
});

describe('PATCH /api/queues/:queue', () => {
  const patch = (queue: string, body: unknown) => s.app.inject({ method: 'PATCH', url: `/api/queues/${queue}`, payload: body as object });
  const settingsRows = async () => (await s.db.pool.query('SELECT count(*)::int AS n FROM herald.queues')).rows[0].n;

  it('sets and clears settings of a queue that has no jobs, and GET /api/queues shows them', async () => {
    const res = await patch('mail', { paused: true, concurrency: 5, groupConcurrency: 2, rateLimit: { count: 10, periodMs: 1000 } });
    expect(res.statusCode, res.body).toBe(200);
    const entry = {
      queue: 'mail', queued: 0, scheduled: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, blocked: 0,
      paused: true, concurrency: 5, groupConcurrency: 2, rateLimit: { count: 10, periodMs: 1000 }, deadLetter: null,
      // Auth is off here: the change is recorded with no role.
      updatedBy: { role: null }, updatedAt: expect.any(String),
    };
    expect(res.json()).toEqual(entry);
    expect((await get('/api/queues')).json().queues).toEqual([entry]);
    const cleared = await patch('mail', { concurrency: null, rateLimit: null });
    expect(cleared.json()).toEqual({ ...entry, concurrency: null, rateLimit: null });
  });

  const invalid: [string, unknown, RegExp][] = [
    ['an empty body', {}, /^the body must set at least one field/],
    ['concurrency 0', { concurrency: 0 }, /^concurrency must be an integer from 1 to 10000, or null to clear it/],
    ['concurrency 10001', { concurrency: 10_001 }, /^concurrency must be an integer from 1 to 10000/],
    ['concurrency text', { concurrency: 'many' }, /^concurrency must be an integer/],
    ['groupConcurrency 1.5', { groupConcurrency: 1.5 }, /^groupConcurrency must be an integer from 1 to 10000/],
    ['rateLimit.count 0', { rateLimit: { count: 0, periodMs: 1000 } }, /^rateLimit.count must be an integer from 1 to 100000/],
    ['rateLimit.count 100001', { rateLimit: { count: 100_001, periodMs: 1000 } }, /^rateLimit.count must be/],
    ['rateLimit.periodMs 99', { rateLimit: { count: 1, periodMs: 99 } }, /^rateLimit.periodMs must be an integer number of milliseconds from 100 to 86400000/],
    ['rateLimit.periodMs over a day', { rateLimit: { count: 1, periodMs: 86_400_001 } }, /^rateLimit.periodMs must be/],
    ['rateLimit without periodMs', { rateLimit: { count: 1 } }, /^rateLimit.periodMs is required/],
    ['paused not a boolean', { paused: 'yes' }, /^paused must be true or false/],
    ['an unknown field', { limit: 3 }, /^body field "limit" is not allowed/],
  ];
  it.each(invalid)('rejects %s with 400 and writes nothing', async (_name, body, message) => {
    await rejected(await patch('mail', body), 'HERALD_VALIDATION', message);
    expect(await settingsRows()).toBe(0);
  });

  it('rejects a bad queue name with 400', async () => {
    await rejected(await patch('a%20b', { paused: true }), 'HERALD_VALIDATION', /^queue must be 1-128 characters/);
    expect(await settingsRows()).toBe(0);
  });
});

describe('operations', () => {
  it('lists queues and the workers holding jobs', async () => {
    await post('/api/jobs/batch', { jobs: [{ kind: 'a' }, { kind: 'b' }, { kind: 'c', queue: 'q2' }] });
    await s.queue.claim({ worker: 'host:1:abc', limit: 2, queues: ['default'] });
    expect((await get('/api/queues')).json().queues).toEqual([
      { queue: 'default', queued: 0, scheduled: 0, running: 2, succeeded: 0, failed: 0, cancelled: 0, blocked: 0, paused: false, concurrency: null, groupConcurrency: null, rateLimit: null, deadLetter: null, updatedBy: null, updatedAt: null },
      { queue: 'q2', queued: 1, scheduled: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, blocked: 0, paused: false, concurrency: null, groupConcurrency: null, rateLimit: null, deadLetter: null, updatedBy: null, updatedAt: null },
    ]);
    // A holder of jobs that never registered (the core API used directly) is still listed.
    expect((await get('/api/workers')).json().workers).toEqual([{
      worker: 'host:1:abc', host: null, pid: null, queues: null, kinds: null, capabilities: null, concurrency: null,
      running: 2, startedAt: null, lastSeenAt: null, since: expect.any(String), jobs: ['1', '2'],
    }]);
  });

  it('reports health with table statistics', async () => {
    await s.db.pool.query('VACUUM herald.job_events'); // a vacuum to report (autovacuum may or may not have run)
    const res = await get('/api/health');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ ok: true, db: 'up', listener: 'up' });
    expect(typeof body.streamLagMs).toBe('number');
    expect(body.tables.map((t: { name: string }) => t.name)).toEqual(['job_events', 'jobs']);
    const autovacuumed = body.tables[0].lastAutovacuum === null ? null : expect.stringMatching(/^\d{4}-\d\d-\d\dT/);
    expect(body.tables[0]).toEqual({ name: 'job_events', liveTuples: expect.any(Number), deadTuples: expect.any(Number), lastAutovacuum: autovacuumed, lastVacuum: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
  });

  it('serves Prometheus metrics', async () => {
    await post('/api/jobs', { kind: 'k', queue: 'm' });
    const res = await get('/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/plain/);
    expect(res.body).toMatch(/herald_jobs\{queue="m",status="queued"\} 1/);
    for (const name of ['herald_sse_clients', 'herald_stream_lag_seconds', 'herald_table_dead_tuples{table="jobs"}', 'herald_jobs_enqueued_total', 'process_resident_memory_bytes']) {
      expect(res.body).toContain(name);
    }
  });

  it('serves OpenAPI and its UI', async () => {
    const spec = (await get('/api/openapi.json')).json();
    expect(spec.openapi).toMatch(/^3\./);
    for (const p of ['/api/jobs', '/api/jobs/batch', '/api/jobs/{id}', '/api/jobs/{id}/events', '/api/jobs/{id}/cancel', '/api/jobs/{id}/retry', '/api/queues', '/api/workers', '/api/health', '/api/events', '/metrics']) {
      expect(spec.paths, p).toHaveProperty([p]);
    }
    expect(spec.paths['/api/jobs'].post.requestBody.content['application/json'].schema.required).toEqual(['kind']);
    const ui = await get('/api/docs');
    expect(ui.statusCode).toBe(200);
    expect(ui.body).toContain('swagger-ui-bundle.js');
    expect((await get('/api/docs/static/swagger-ui-bundle.js')).statusCode).toBe(200);
  });

  it('answers unknown routes with a 404 in the error shape', async () => {
    await rejected(await get('/api/nope'), 'HERALD_ROUTE_NOT_FOUND', /no route GET \/api\/nope/);
  });

  it('sends security headers and no CORS', async () => {
    const res = await get('/api/health');
    expect(res.headers['content-security-policy']).toMatch(/default-src 'self'.*script-src 'self'/);
    expect(res.headers['content-security-policy']).not.toMatch(/upgrade-insecure-requests/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

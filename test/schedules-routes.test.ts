// The schedule routes through fastify.inject on a real database: create, replace, list, run now,
// delete, and every rejection (which writes nothing).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { testServer, type TestServer } from './server-support.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer();
});
afterAll(() => s.close());
beforeEach(async () => {
  await s.db.pool.query('TRUNCATE herald.jobs, herald.job_events, herald.schedules RESTART IDENTITY');
});

const inject = (method: 'GET' | 'PUT' | 'DELETE' | 'POST', url: string, payload?: unknown) =>
  s.app.inject({ method, url, payload: payload as object });
const rows = async () => (await s.db.pool.query('SELECT count(*)::int AS n FROM herald.schedules')).rows[0].n;

describe('schedules', () => {
  it('creates (201), replaces (200), lists, runs now and deletes', async () => {
    const body = { cron: '0 9 * * 1-5', timezone: 'Europe/Paris', job: { kind: 'report', payload: { daily: true }, queue: 'reports' } };
    const created = await inject('PUT', '/api/schedules/daily-report', body);
    expect(created.statusCode, created.body).toBe(201);
    const schedule = created.json();
    expect(schedule).toEqual({
      name: 'daily-report', cron: '0 9 * * 1-5', timezone: 'Europe/Paris', job: body.job, paused: false,
      nextRunAt: expect.any(String), lastRunAt: null, lastJobId: null,
    });
    // 09:00 in Paris is 07:00 or 08:00 UTC, on a weekday, in the future.
    const next = new Date(schedule.nextRunAt);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect([7, 8]).toContain(next.getUTCHours());
    expect([1, 2, 3, 4, 5]).toContain(next.getUTCDay());

    const replaced = await inject('PUT', '/api/schedules/daily-report', { ...body, cron: '*/10 * * * * *', timezone: undefined, paused: true });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json()).toMatchObject({ cron: '*/10 * * * * *', timezone: 'UTC', paused: true, nextRunAt: null });

    const run = await inject('POST', '/api/schedules/daily-report/run');
    expect(run.statusCode, run.body).toBe(201);
    expect(run.json()).toMatchObject({ kind: 'report', queue: 'reports', payload: { daily: true }, status: 'queued' });
    const listed = (await inject('GET', '/api/schedules')).json().schedules;
    expect(listed).toEqual([expect.objectContaining({ name: 'daily-report', lastJobId: run.json().id, lastRunAt: expect.any(String) })]);

    expect((await inject('DELETE', '/api/schedules/daily-report')).statusCode).toBe(204);
    expect((await inject('GET', '/api/schedules')).json().schedules).toEqual([]);
    // The job it made stays.
    expect((await s.app.inject({ method: 'GET', url: `/api/jobs/${run.json().id}` })).statusCode).toBe(200);
  });

  it('404s a missing schedule on delete and run', async () => {
    for (const [method, url] of [['DELETE', '/api/schedules/nope'], ['POST', '/api/schedules/nope/run']] as const) {
      const res = await inject(method, url);
      expect(res.statusCode).toBe(404);
      expect(res.json().message).toBe('schedule "nope" does not exist');
    }
  });

  const job = { kind: 'k' };
  const invalid: [string, unknown, RegExp][] = [
    ['a cron with 4 fields', { cron: '* * * *', job }, /^cron "\* \* \* \*" has 4 field\(s\); write 5 \(minute hour day month weekday\) or 6 \(second first\)/],
    ['a cron with 7 fields', { cron: '* * * * * * *', job }, /^cron .* has 7 field\(s\)/],
    ['a minute out of range', { cron: '61 * * * *', job }, /^cron "61 \* \* \* \*" is not valid: Invalid value for minute: 61/],
    ['a word', { cron: 'every day', job }, /^cron "every day" has 2 field/],
    ['an unknown time zone', { cron: '* * * * *', timezone: 'Mars/Olympus', job }, /^timezone "Mars\/Olympus" is not an IANA time zone name/],
    ['no job', { cron: '* * * * *' }, /^job is required/],
    ['a job without kind', { cron: '* * * * *', job: {} }, /^job.kind is required/],
    ['a job with an idempotency key', { cron: '* * * * *', job: { kind: 'k', idempotencyKey: 'x' } }, /^body field "job.idempotencyKey" is not allowed/],
    ['a bad job field', { cron: '* * * * *', job: { kind: 'k', priority: 99999 } }, /^job.priority must be an integer/],
    ['an unknown field', { cron: '* * * * *', job, every: 'day' }, /^body field "every" is not allowed/],
  ];
  it.each(invalid)('rejects %s with 400 and writes nothing', async (_name, body, message) => {
    const res = await inject('PUT', '/api/schedules/x', body);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().message).toMatch(message);
    expect(await rows()).toBe(0);
  });

  it('rejects a bad schedule name', async () => {
    const res = await inject('PUT', '/api/schedules/a%20b', { cron: '* * * * *', job });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/^name must be 1-128 characters/);
    expect(await rows()).toBe(0);
  });
});

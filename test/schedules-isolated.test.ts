// One schedule can never stop the others: each makes its job in its own savepoint. Keys that
// start with `schedule:` are the scheduler's (a producer gets 400), and ticks are counted on the
// database's clock, which due-ness uses too.
import { afterAll, beforeAll, beforeEach, expect, it, vi } from 'vitest';
import { testServer, type TestServer } from './server-support.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer();
});
afterAll(() => s.close());
beforeEach(async () => {
  await s.db.pool.query('TRUNCATE herald.jobs, herald.job_events, herald.schedules RESTART IDENTITY');
});

const makeDue = (name: string) => s.db.pool.query(`UPDATE herald.schedules SET next_run_at = now() - interval '1 second' WHERE name = $1`, [name]);

it('a schedule whose tick conflicts skips that tick; the others make their jobs in the same turn', async () => {
  const q = s.db.queue;
  for (const name of ['a', 'b']) await q.putSchedule(name, { cron: '* * * * *', job: { kind: 'tick' } });
  await makeDue('a');
  await makeDue('b');
  // A job of another kind already holds a's key for the tick the turn will make (written by SQL:
  // the API refuses such keys now).
  const { rows: [{ tick }] } = await s.db.pool.query(`SELECT date_trunc('minute', now()) AS tick`);
  await s.db.pool.query(`INSERT INTO herald.jobs (kind, idempotency_key) VALUES ('other', $1)`, [`schedule:a:${tick.toISOString()}`]);
  const turn = await q.fireDueSchedules();
  expect(turn.made.map((j) => j.idempotencyKey)).toEqual([`schedule:b:${tick.toISOString()}`]);
  expect(turn.failed).toEqual([{ name: 'a', error: expect.stringContaining('') }]);
  // a moved on to its next tick instead of failing every turn.
  const { rows } = await s.db.pool.query(`SELECT name, next_run_at > now() AS ahead FROM herald.schedules ORDER BY name`);
  expect(rows).toEqual([{ name: 'a', ahead: true }, { name: 'b', ahead: true }]);
});

it('keys starting with schedule: are reserved: a producer gets 400 (HTTP) or a ValidationError (core), and nothing is written', async () => {
  const key = 'schedule:nightly:2026-01-01T00:00:00.000Z';
  const one = await s.app.inject({ method: 'POST', url: '/api/jobs', payload: { kind: 'k', idempotencyKey: key } });
  expect(one.statusCode).toBe(400);
  expect(JSON.stringify(one.json())).toMatch(/reserved/);
  const batch = await s.app.inject({ method: 'POST', url: '/api/jobs/batch', payload: { jobs: [{ kind: 'k' }, { kind: 'k', idempotencyKey: key }] } });
  expect(batch.statusCode).toBe(400);
  await expect(s.db.queue.enqueue({ kind: 'k', idempotencyKey: key })).rejects.toThrow(/reserved/);
  await expect(s.db.queue.enqueueMany([{ kind: 'k', idempotencyKey: key }])).rejects.toMatchObject({ name: 'ValidationError' });
  expect((await s.db.pool.query('SELECT count(*)::int AS n FROM herald.jobs')).rows[0].n).toBe(0);
  // Other keys, even ones that mention a schedule, are the producer's.
  expect((await s.app.inject({ method: 'POST', url: '/api/jobs', payload: { kind: 'k', idempotencyKey: 'my-schedule:1' } })).statusCode).toBe(201);
});

it("a schedule's next tick is counted on the database's clock, not this host's", async () => {
  // This host's clock runs two hours behind the database's.
  vi.useFakeTimers({ toFake: ['Date'] });
  try {
    vi.setSystemTime(Date.now() - 2 * 3_600_000);
    await s.db.queue.putSchedule('hourly', { cron: '0 * * * *', job: { kind: 'tick' } });
  } finally {
    vi.useRealTimers();
  }
  const { rows } = await s.db.pool.query(`SELECT next_run_at > now() AS ahead FROM herald.schedules WHERE name = 'hourly'`);
  expect(rows[0].ahead).toBe(true);
  // So nothing is due: a turn makes no job.
  expect((await s.db.queue.fireDueSchedules()).made).toEqual([]);
});

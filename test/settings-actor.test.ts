// Who changed a queue's settings, and who asked a schedule to run now, through fastify.inject on a
// real database with labelled (role:label:token) and old-form (role:token) admin tokens.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { testServer, TOKEN_SPEC, TOKENS, type TestServer } from './server-support.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer({ tokens: `${TOKEN_SPEC},admin:alice:alice-token-000001` });
});
afterAll(() => s.close());
beforeEach(async () => {
  await s.db.pool.query('TRUNCATE herald.jobs, herald.job_events, herald.queues, herald.schedules RESTART IDENTITY');
});

const ALICE = { authorization: 'Bearer alice-token-000001' };
const ADMIN = { authorization: `Bearer ${TOKENS.admin}` };
const VIEWER = { authorization: `Bearer ${TOKENS.viewer}` };

const patch = (queue: string, body: object, headers: Record<string, string>) =>
  s.app.inject({ method: 'PATCH', url: `/api/queues/${queue}`, payload: body, headers });
const entry = async (queue: string) => {
  const res = await s.app.inject({ method: 'GET', url: '/api/queues', headers: VIEWER });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ queues: { queue: string; updatedBy: unknown; updatedAt: string | null }[] }>().queues.find((q) => q.queue === queue);
};

describe('queue settings record who changed them', () => {
  it('names the labelled token, then the old-form one, with the time of each change', async () => {
    const dbNow = async () => (await s.db.pool.query<{ now: Date }>('SELECT now()')).rows[0].now.getTime();
    const before = await dbNow();
    const first = await patch('mail', { paused: true }, ALICE);
    const after = await dbNow();
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ paused: true, updatedBy: { role: 'admin', label: 'alice' } });
    const byAlice = await entry('mail');
    expect(byAlice).toMatchObject({ paused: true, updatedBy: { role: 'admin', label: 'alice' }, updatedAt: first.json().updatedAt });
    // The database's clock stamps the change: it falls between its readings before and after the PATCH.
    expect(Date.parse(byAlice!.updatedAt!)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(byAlice!.updatedAt!)).toBeLessThanOrEqual(after);

    const second = await patch('mail', { concurrency: 2 }, ADMIN);
    expect(second.statusCode, second.body).toBe(200);
    // An old-form token has no label: the reply carries the role alone, no label key.
    expect(second.json().updatedBy).toStrictEqual({ role: 'admin' });
    const byAdmin = await entry('mail');
    expect(byAdmin).toMatchObject({ paused: true, concurrency: 2, updatedBy: { role: 'admin' } });
    expect(byAdmin!.updatedBy).not.toHaveProperty('label');
    expect(Date.parse(byAdmin!.updatedAt!)).toBeGreaterThanOrEqual(Date.parse(byAlice!.updatedAt!));
  });

  it('leaves the record alone when a change is refused', async () => {
    expect((await patch('mail', { paused: true }, ALICE)).statusCode).toBe(200);
    const kept = await entry('mail');
    expect((await patch('mail', { concurrency: 0 }, ADMIN)).statusCode).toBe(400);
    expect((await patch('mail', { paused: false }, VIEWER)).statusCode).toBe(403);
    expect(await entry('mail')).toEqual(kept);
  });

  it('a queue with jobs but no settings says nobody changed them', async () => {
    await s.queue.enqueue({ kind: 'k', queue: 'plain' });
    expect(await entry('plain')).toMatchObject({ updatedBy: null, updatedAt: null });
  });
});

describe('run now records who asked', () => {
  it("the job's enqueued event carries data.by; a tick's job made by the scheduler carries none", async () => {
    const put = await s.app.inject({ method: 'PUT', url: '/api/schedules/nightly', payload: { cron: '0 3 * * *', job: { kind: 'report' } }, headers: ADMIN });
    expect(put.statusCode, put.body).toBe(201);
    const run = await s.app.inject({ method: 'POST', url: '/api/schedules/nightly/run', headers: ALICE });
    expect(run.statusCode, run.body).toBe(201);
    const { rows } = await s.db.pool.query<{ type: string; data: unknown }>('SELECT type::text, data FROM herald.job_events WHERE job_id = $1 ORDER BY id', [run.json().id]);
    expect(rows).toEqual([{ type: 'enqueued', data: expect.objectContaining({ by: { role: 'admin', label: 'alice' } }) }]);

    // A scheduler turn fires the due tick: the job it makes is the scheduler's, signed by nobody.
    await s.db.pool.query(`UPDATE herald.schedules SET next_run_at = now() - interval '1 second' WHERE name = 'nightly'`);
    const turn = await s.queue.fireDueSchedules();
    expect(turn).toMatchObject({ busy: false, failed: [], made: [expect.objectContaining({ kind: 'report' })] });
    const tickJob = turn.made[0];
    expect(tickJob.idempotencyKey).toMatch(/^schedule:nightly:/);
    const tickEvents = await s.db.pool.query<{ type: string; data: Record<string, unknown> | null }>(
      'SELECT type::text, data FROM herald.job_events WHERE job_id = $1 ORDER BY id',
      [tickJob.id],
    );
    expect(tickEvents.rows.map((r) => r.type)).toEqual(['enqueued']);
    expect(tickEvents.rows[0].data ?? {}).not.toHaveProperty('by');

    // A plain enqueue (no manual action) is not signed.
    const plain = await s.queue.enqueue({ kind: 'k' });
    const plainEvents = await s.db.pool.query<{ data: Record<string, unknown> | null }>('SELECT data FROM herald.job_events WHERE job_id = $1', [plain.job.id]);
    expect(plainEvents.rows[0].data?.by).toBeUndefined();
  });
});

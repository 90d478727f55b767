// The insert path's triggers (drizzle/0022_insert_path.sql): one trigger per jobs INSERT does the
// wake-up, the events and the counts; what it writes and wakes is unchanged (wake.test.ts and
// job-counts.test.ts hold the promises), and its event times need no per-statement plan.
import { expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';

const db = useTestDatabase();
const q = async <T>(sql: string, params: unknown[] = []) => (await db.pool.query(sql, params)).rows as T[];

it('runs one trigger per jobs INSERT statement', async () => {
  const rows = await q<{ tgname: string }>(
    `SELECT tgname FROM pg_trigger WHERE tgrelid = 'herald.jobs'::regclass AND NOT tgisinternal
       AND tgtype & 4 <> 0 ORDER BY 1`, // TRIGGER_TYPE_INSERT
  );
  expect(rows.map((r) => r.tgname)).toEqual(['jobs_after_insert']);
});

it('plans the event times inline (herald.iso_utc is not run as a function of its own)', async () => {
  const plan = await q<{ 'QUERY PLAN': string }>(`EXPLAIN VERBOSE SELECT herald.iso_utc(now())`);
  const text = plan.map((r) => r['QUERY PLAN']).join('\n');
  expect(text).toContain('to_char');
  expect(text).not.toContain('iso_utc');
  expect((await q<{ t: string }>(`SELECT herald.iso_utc('2026-01-02 03:04:05.678+02') AS t`))[0].t).toBe('2026-01-02T01:04:05.678Z');
});

it('writes the events and counts of a many-row INSERT of two queues, and records both wake-ups before the events', async () => {
  const c = await db.pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(`INSERT INTO herald.jobs (queue, kind, payload, available_at)
      SELECT CASE WHEN i % 2 = 0 THEN 'ins-a' ELSE 'ins-b' END, 'k', '{}', CASE WHEN i = 5 THEN now() + interval '1 hour' ELSE now() END
      FROM generate_series(1, 5) i`);
    const wake = await c.query<{ t: string[] }>(`SELECT current_setting('herald.wake_targets')::text[] AS t`);
    expect(wake.rows[0].t.sort()).toEqual(['herald_events', 'herald_jobs ins-a', 'herald_jobs ins-b']);
    // The events' own trigger found herald_events recorded: a second call names nothing new.
    expect((await c.query(`SELECT herald.wake_at_commit('{herald_events}') AS n`)).rows[0].n).toBe(0);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
  const events = await q<{ queue: string; n: number }>(
    `SELECT queue, count(*)::int AS n FROM herald.job_events WHERE type = 'enqueued' AND queue LIKE 'ins-%' GROUP BY 1 ORDER BY 1`,
  );
  expect(events).toEqual([{ queue: 'ins-a', n: 2 }, { queue: 'ins-b', n: 3 }]);
  const counts = await q<{ queue: string; n: number }>(
    `SELECT queue, sum(n)::int AS n FROM herald.job_counts WHERE queue LIKE 'ins-%' GROUP BY 1 ORDER BY 1`,
  );
  expect(counts).toEqual([{ queue: 'ins-a', n: 2 }, { queue: 'ins-b', n: 3 }]);
  expect((await q<{ n: number }>('SELECT count(*)::int AS n FROM herald.wake_intents'))[0].n).toBe(0);
});

it('records nothing for an INSERT that inserted no row', async () => {
  await db.pool.query(`INSERT INTO herald.jobs (queue, kind, payload, idempotency_key) VALUES ('none', 'k', '{}', 'once')`);
  const c = await db.pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(`INSERT INTO herald.jobs (queue, kind, payload, idempotency_key) VALUES ('none', 'k', '{}', 'once')
      ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`);
    expect((await c.query(`SELECT current_setting('herald.wake_targets', true) AS t`)).rows[0].t ?? '').toBe('');
    expect((await c.query('SELECT count(*)::int AS n FROM herald.wake_intents')).rows[0].n).toBe(0);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
  expect((await q<{ n: number }>(`SELECT sum(n)::int AS n FROM herald.job_counts WHERE queue = 'none'`))[0].n).toBe(1);
});

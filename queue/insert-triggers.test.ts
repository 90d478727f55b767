// The insert path's triggers (drizzle/0022_insert_path.sql): one trigger per jobs INSERT does the
// wake-up, the events and the counts; what it writes and wakes is unchanged (wake.test.ts and
// job-counts.test.ts hold the promises), and its event times need no per-statement plan. A
// statement of one job takes a path of its own (drizzle/0027_enqueue_fast_path.sql).
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { waitFor } from '../test/support/wait.ts';
import { EVENTS_CHANNEL, JOBS_CHANNEL } from './channels.ts';

const db = useTestDatabase();
let listener: pg.Client;
const heard: string[] = [];

beforeAll(async () => {
  listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  listener.on('notification', (n) => heard.push(`${n.channel}:${n.payload ?? ''}`));
  await listener.query(`LISTEN ${JOBS_CHANNEL}; LISTEN ${EVENTS_CHANNEL}`);
});
afterAll(async () => {
  await listener.end();
});
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

// Queue suffix, status, run time: runnable (twice in one queue), scheduled, blocked.
const SHAPES = [
  ['a', 'queued', '2000-01-01T00:00:00Z'],
  ['a', 'queued', '2000-01-01T00:05:00Z'],
  ['b', 'queued', '2100-01-01T00:00:00Z'],
  ['c', 'blocked', '2000-01-01T00:00:00Z'],
] as const;

/**
 * Inserts SHAPES into queues `prefix`-suffix in one transaction, one job per statement or all in
 * one; returns what it recorded to wake, and what it wrote and sent, with the prefix taken off.
 */
async function enqueueShapes(prefix: string, oneByOne: boolean) {
  const rows = SHAPES.map(([queue, status, at]) => `('${prefix}-${queue}', 'k', '{}', '${status}', '${at}')`);
  const insert = (values: string[]) => `INSERT INTO herald.jobs (queue, kind, payload, status, available_at) VALUES ${values.join(', ')}`;
  // Notifications of earlier tests' commits still on their way arrive first (a query on the listening
  // session delivers what is pending): else they count as this insert's.
  await listener.query('SELECT 1');
  const sent = heard.length;
  const c = await db.pool.connect();
  let targets: string[];
  try {
    await c.query('BEGIN');
    if (oneByOne) for (const row of rows) await c.query(insert([row]));
    else await c.query(insert(rows));
    targets = (await c.query<{ t: string[] }>(`SELECT ARRAY(SELECT unnest(current_setting('herald.wake_targets')::text[]) ORDER BY 1) AS t`)).rows[0].t;
    await c.query('COMMIT');
  } finally {
    c.release();
  }
  const strip = (v: string) => v.replaceAll(`${prefix}-`, '');
  // herald_events, the runnable queue, the scheduled one.
  await waitFor(() => heard.length >= sent + 3, { what: `the notifications of ${prefix}` });
  await listener.query('SELECT 1');
  const events = await q<{ queue: string; kind: string; type: string; status: string; attempt: number; data: unknown; flow_id: string | null }>(
    `SELECT queue, kind, type, status, attempt, data, flow_id FROM herald.job_events WHERE queue LIKE $1 || '-%' ORDER BY id`, [prefix],
  );
  const counts = await q<{ queue: string; status: string; minute: Date; n: number }>(
    `SELECT queue, status, minute, sum(n)::int AS n FROM herald.job_counts WHERE queue LIKE $1 || '-%' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, [prefix],
  );
  return {
    targets: targets.map(strip),
    sent: heard.slice(sent).map(strip).sort(),
    events: events.map((e) => ({ ...e, queue: strip(e.queue) })),
    counts: counts.map((r) => ({ ...r, queue: strip(r.queue) })),
  };
}

it('writes and wakes the same for jobs inserted one per statement as for the same jobs in one statement', async () => {
  const one = await enqueueShapes('one', true);
  const many = await enqueueShapes('many', false);
  expect(one.targets).toEqual(['herald_events', 'herald_jobs a']);
  expect(one.sent).toEqual(['herald_events:', 'herald_jobs:a', `herald_jobs:b ${Date.parse('2100-01-01T00:00:00Z')}`]);
  expect(one.events).toHaveLength(SHAPES.length);
  expect(one.events[2]).toEqual({ queue: 'b', kind: 'k', type: 'enqueued', status: 'queued', attempt: 0, data: { priority: 0, runAt: '2100-01-01T00:00:00.000Z', maxAttempts: 5 }, flow_id: null });
  expect(one.counts.map((r) => [r.queue, r.status, r.n])).toEqual([['a', 'queued', 1], ['a', 'queued', 1], ['b', 'queued', 1], ['c', 'blocked', 1]]);
  expect(many).toEqual(one);
});

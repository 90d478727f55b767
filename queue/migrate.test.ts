// Migrations are idempotent, safe when several processes run them at once, and upgrade a
// database made by older migrations in place, with its data.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createPool, withDatabase } from './database.ts';
import { MIGRATIONS_DIR, migrate } from './migrate.ts';
import { Queue } from './queue.ts';
import { rollupAll } from '../test/support/history.ts';
import { waitFor } from '../test/support/wait.ts';
import { parseCursor } from './cursor.ts';

// drizzle/ as it first landed (0000_tables, 0001_triggers with the scheduled wake-up rounded
// down), copied from the repository's history because tests cannot read git.
const V1 = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../test/fixtures/migrations-v1');

/** How many migrations head has. */
const HEAD = (JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }).entries.length;

const made: string[] = [];
async function freshDatabase(suffix: string): Promise<string> {
  const name = `herald_t_${process.ppid}_${suffix}`;
  const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  made.push(name);
  return withDatabase(inject('pgAdminUrl'), name);
}
afterEach(async () => {
  const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await admin.connect();
  for (const name of made.splice(0)) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
});

/** Claims `limit` queued jobs of `queue` for worker w:1:x as a claim does, in SQL any schema version takes. */
async function claimByHand(url: string, queue: string, limit: number): Promise<{ id: string; attempt: number }[]> {
  return query(url, `UPDATE herald.jobs SET status = 'running', attempt = attempt + 1, locked_by = 'w:1:x', started_at = now(),
                       lease_expires_at = now() + interval '30 s'
                     WHERE id IN (SELECT id FROM herald.jobs WHERE queue = '${queue}' AND status = 'queued' ORDER BY id LIMIT ${limit})
                     RETURNING id::text, attempt`);
}

async function query<R extends pg.QueryResultRow>(url: string, text: string): Promise<R[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<R>(text)).rows;
  } finally {
    await c.end();
  }
}

// 500 µs past a whole ms (as a retry's now() + backoff can be): rounded down and rounded up
// give different payloads. Written in SQL, since a JavaScript Date holds whole ms only.
const SCHEDULED_AT = '2099-01-01T00:00:00.0005Z';
const WHOLE_MS = Date.parse('2099-01-01T00:00:00Z');

/** The herald_jobs payload that inserting a job scheduled at SCHEDULED_AT (or runnable now) sends. */
async function scheduledWakeUp(url: string, queueName: string, at: string | null = SCHEDULED_AT): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('LISTEN herald_jobs');
    const heard = new Promise<string>((resolve) =>
      c.on('notification', (n) => (n.payload === queueName || n.payload?.startsWith(`${queueName} `)) && resolve(n.payload)),
    );
    await c.query(`INSERT INTO herald.jobs (kind, queue, available_at) VALUES ('later', $1, coalesce($2, now()))`, [queueName, at]);
    return await heard;
  } finally {
    await c.end();
  }
}

/** A folder with drizzle/'s migrations before the one whose tag starts with `tag`. */
function migrationsBefore(tag: string): string {
  const journal = JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] };
  const upTo = journal.entries.findIndex((e) => e.tag.startsWith(tag));
  expect(upTo).toBeGreaterThan(0);
  const old = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'herald-migrations-'));
  fs.mkdirSync(path.join(old, 'meta'));
  const entries = journal.entries.slice(0, upTo);
  for (const e of entries) fs.copyFileSync(path.join(MIGRATIONS_DIR, `${e.tag}.sql`), path.join(old, `${e.tag}.sql`));
  fs.writeFileSync(path.join(old, 'meta', '_journal.json'), JSON.stringify({ ...journal, entries }));
  return old;
}

describe('migrate', () => {
  it('applies once when four run at the same time, and again is a no-op', async () => {
    const url = await freshDatabase('migrate');
    await Promise.all([migrate(url), migrate(url), migrate(url), migrate(url)]);
    await migrate(url);
    const rows = await query(url, `
      SELECT (SELECT count(*)::int FROM drizzle.__drizzle_migrations) AS applied,
             (SELECT array_agg(tgname::text ORDER BY tgname) FROM pg_trigger WHERE NOT tgisinternal) AS triggers`);
    expect(rows[0]).toEqual({ applied: HEAD, triggers: ['job_events_after_insert', 'jobs_after_delete', 'jobs_after_insert', 'jobs_after_update', 'jobs_counts_after_delete', 'jobs_counts_after_truncate', 'jobs_counts_after_update', 'queues_after_change', 'schedules_after_change', 'wake_intents_at_commit'] });
  });

  it('upgrades a database made by the first landed migrations to head, keeping its jobs and events', async () => {
    const url = await freshDatabase('upgrade');
    await migrate(url, V1);
    const pool = createPool(url, { max: 2 });
    const queue = new Queue(pool);
    try {
      // Work in every state the old schema held: done, running (claimed before the upgrade), queued.
      // Written in SQL of the old shape: head's Queue knows columns the old tables lack.
      await query(url, `INSERT INTO herald.jobs (kind) VALUES ('a'), ('b')`);
      await query(url, `INSERT INTO herald.jobs (kind, queue, payload) VALUES ('c', 'other', '{"n":1}')`);
      const claimSql = `UPDATE herald.jobs SET status = 'running', attempt = 1, locked_by = 'w:1:x',
        started_at = now(), lease_expires_at = now() + interval '1 hour' WHERE kind IN ('a', 'b') RETURNING id`;
      const claimed = (await query<{ id: string }>(url, claimSql)).map((r) => r.id).sort();
      const [done, running] = claimed.map((id) => ({ id }));
      expect(await queue.complete('w:1:x', [{ id: done.id, attempt: 1, result: { ok: true } }])).toEqual([]);
      // The old function rounds the wake-up time down: the bug the upgrade must fix.
      expect(await scheduledWakeUp(url, 'before')).toBe(`before ${WHOLE_MS}`);

      const jobsBefore = await query(url, 'SELECT * FROM herald.jobs ORDER BY id');
      const eventsBefore = await query(url, 'SELECT id, job_id, tx::text, type, status, attempt, data FROM herald.job_events ORDER BY id');
      expect(eventsBefore.length).toBeGreaterThanOrEqual(7);

      await migrate(url);

      // Every old column keeps its value; columns added since hold their defaults.
      const oldColumns = Object.keys(jobsBefore[0]).map((c) => `"${c}"`).join(', ');
      expect(await query(url, `SELECT ${oldColumns} FROM herald.jobs ORDER BY id`)).toEqual(jobsBefore);
      expect(await query(url, 'SELECT DISTINCT "group", tags, timeout_ms, expire_at FROM herald.jobs')).toEqual([
        { group: null, tags: [], timeout_ms: null, expire_at: null },
      ]);
      // The same events; only the times in their data now read as ISO 8601 UTC with a Z, like `at`.
      const iso = (t: unknown) => (typeof t === 'string' ? new Date(t).toISOString() : t);
      const timesAsIso = (data: Record<string, unknown>) => ({
        ...data,
        ...('runAt' in data ? { runAt: iso(data.runAt) } : {}),
        ...('leaseExpiresAt' in data ? { leaseExpiresAt: iso(data.leaseExpiresAt) } : {}),
      });
      expect(await query(url, 'SELECT id, job_id, tx::text, type, status, attempt, data FROM herald.job_events ORDER BY id')).toEqual(
        eventsBefore.map((e) => ({ ...e, data: timesAsIso(e.data as Record<string, unknown>) })),
      );
      expect(eventsBefore.some((e) => typeof (e.data as { runAt?: unknown }).runAt === 'string' && !String((e.data as { runAt: string }).runAt).endsWith('Z'))).toBe(true);
      expect(await query(url, 'SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations')).toEqual([{ n: HEAD }]);
      // Queue history starts at the beginning of the feed: the events from before the upgrade count.
      await rollupAll(queue, pool);
      // a, b, c and the scheduled job inserted before the upgrade
      expect(await query(url, 'SELECT sum(enqueued)::int AS n FROM herald.queue_stats')).toEqual([{ n: 4 }]);
      // Head's functions are in place: the wake-up is rounded up, so a timer never fires early.
      expect(await scheduledWakeUp(url, 'after')).toBe(`after ${WHOLE_MS + 1}`);
      // Runnable work is woken at commit (coalesced), and the commit-time step leaves nothing behind.
      expect(await scheduledWakeUp(url, 'now', null)).toBe('now');
      expect(await query(url, 'SELECT count(*)::int AS n FROM herald.wake_intents')).toEqual([{ n: 0 }]);
      // A job claimed before the upgrade finishes after it, and the triggers still log it.
      expect(await queue.complete('w:1:x', [{ id: running.id, attempt: 1, result: null }])).toEqual([]);
      expect((await queue.events(running.id)).map((e) => e.type)).toEqual(['enqueued', 'claimed', 'succeeded']);
      // Events are keyed by the feed's order (tx, id), with one more index by job: two in all.
      expect(await query(url, `
        SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) LIKE '%(tx, id)' AS tx_id
        FROM pg_index WHERE indrelid = 'herald.job_events'::regclass ORDER BY 1`)).toEqual([
        { name: 'herald.job_events_job', tx_id: false },
        { name: 'herald.job_events_pkey', tx_id: true },
      ]);
    } finally {
      await pool.end();
    }
  });

  it('upgrades queue settings made before their changes were attributed: kept, with updatedBy null', async () => {
    // drizzle/ up to 0010 (the last migration before updated_by), in a folder of its own.
    const old = migrationsBefore('0011_');

    const url = await freshDatabase('settings');
    const pool = createPool(url, { max: 2 });
    try {
      await migrate(url, old);
      await query(url, `INSERT INTO herald.queues (queue, paused, concurrency) VALUES ('mail', true, 3)`);
      const [{ at }] = await query<{ at: Date }>(url, `SELECT updated_at AS at FROM herald.queues`);
      await migrate(url);
      expect(await query(url, 'SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations')).toEqual([{ n: HEAD }]);
      const [mail] = await new Queue(pool).counts('mail');
      expect(mail).toMatchObject({ paused: true, concurrency: 3, updatedBy: null, updatedAt: at.toISOString() });
      // The next change is attributed.
      expect(await new Queue(pool).patchQueue('mail', { paused: false }, { role: 'admin', label: 'alice' })).toMatchObject({
        paused: false, concurrency: 3, updatedBy: { role: 'admin', label: 'alice' },
      });
    } finally {
      await pool.end();
      fs.rmSync(old, { recursive: true, force: true });
    }
  });
  it('upgrades jobs made before job counts: counted in place, every status, scheduled apart', async () => {
    const old = migrationsBefore('0018_');
    const url = await freshDatabase('counts');
    const pool = createPool(url, { max: 2 });
    const queue = new Queue(pool);
    try {
      await migrate(url, old);
      // Every status; queued jobs due long ago, now and in two hours.
      await query(url, `
        INSERT INTO herald.jobs (kind, queue, status, attempt, available_at, started_at, finished_at, locked_by, lease_expires_at) VALUES
          ('a', 'mail', 'queued', 0, now() - interval '2 hours', NULL, NULL, NULL, NULL),
          ('a', 'mail', 'queued', 0, now(), NULL, NULL, NULL, NULL),
          ('a', 'mail', 'queued', 0, now() + interval '2 hours', NULL, NULL, NULL, NULL),
          ('a', 'mail', 'running', 1, now(), now(), NULL, 'w:1:x', now() + interval '1 hour'),
          ('a', 'mail', 'succeeded', 1, now(), now(), now(), NULL, NULL),
          ('a', 'mail', 'failed', 1, now(), now(), now(), NULL, NULL),
          ('a', 'mail', 'cancelled', 0, now(), NULL, now(), NULL, NULL),
          ('a', 'mail', 'blocked', 0, now(), NULL, NULL, NULL, NULL),
          ('b', 'images', 'succeeded', 1, now(), now(), now(), NULL, NULL)`);
      await migrate(url);
      const counted = `SELECT queue, status::text, count(*)::int AS n FROM herald.jobs GROUP BY 1, 2 ORDER BY 1, 2`;
      const kept = `SELECT queue, status::text, sum(n)::int AS n FROM herald.job_counts GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2`;
      expect(await query(url, kept)).toEqual(await query(url, counted));
      expect(await queue.counts()).toEqual([
        expect.objectContaining({ queue: 'images', queued: 0, scheduled: 0, succeeded: 1 }),
        expect.objectContaining({ queue: 'mail', queued: 2, scheduled: 1, running: 1, succeeded: 1, failed: 1, cancelled: 1, blocked: 1 }),
      ]);
      // The triggers count from here on: the running job finishes.
      expect(await queue.complete('w:1:x', [{ id: '4', attempt: 1, result: null }])).toEqual([]);
      expect(await query(url, kept)).toEqual(await query(url, counted));
    } finally {
      await pool.end();
      fs.rmSync(old, { recursive: true, force: true });
    }
  });

  it('moves the one-column job rules to domains in place: no rewrite, rows kept, each rule refuses by its old name, a running process goes on', async () => {
    const old = migrationsBefore('0026_');
    const url = await freshDatabase('domains');
    const pool = createPool(url, { max: 2 });
    const queue = new Queue(pool);
    try {
      await migrate(url, old);
      const longest = 'n'.repeat(128);
      await queue.enqueue({ kind: 'k', queue: longest, group: 'g', tags: [longest, 'x'], requires: ['gpu'], maxAttempts: 1000, timeoutMs: 86_400_000, idempotencyKey: 'i'.repeat(255) });
      await queue.enqueue({ kind: 'k', queue: 'open' });
      // Statements prepared on the pool's connections before the upgrade. (The job is claimed by
      // hand: today's claim reads the gate's dead-letter queues, a column this schema lacks.)
      const [claimed] = await claimByHand(url, 'open', 1);
      await queue.progress('w:1:x', claimed, 40, 'half');
      const all = `SELECT * FROM herald.jobs ORDER BY id`;
      const files = `SELECT pg_relation_filenode('herald.jobs') AS t, pg_relation_filenode('herald.jobs_queue_id') AS i`;
      const [rows, before] = [await query(url, all), await query(url, files)];

      await migrate(url);
      expect(await query(url, files)).toEqual(before);
      // Later migrations add columns (NULL on these rows): the rows are compared on the old ones.
      const oldColumns = new Set(Object.keys(rows[0]));
      const kept = (await query(url, all)).map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => oldColumns.has(k))));
      expect(kept).toEqual(rows);
      // The process that prepared its statements before goes on: its first try after the change
      // of type gets "cached plan must not change result type" and is retried under new names.
      const { job } = await queue.enqueue({ kind: 'k', queue: 'open' });
      expect((await queue.claim({ worker: 'w:1:x', queues: ['open'], limit: 1 })).map((j) => j.id)).toEqual([job.id]);
      expect(await queue.complete('w:1:x', [{ id: claimed.id, attempt: claimed.attempt, result: null }])).toEqual([]);

      const refused: [string, string][] = [
        [`UPDATE herald.jobs SET queue = '${longest}x'`, 'jobs_queue_name'],
        [`UPDATE herald.jobs SET kind = 'no spaces'`, 'jobs_kind_name'],
        [`UPDATE herald.jobs SET "group" = ''`, 'jobs_group_name'],
        [`UPDATE herald.jobs SET ref = 'é'`, 'jobs_ref_name'],
        [`UPDATE herald.jobs SET tags = ARRAY['a,b']`, 'jobs_tags_names'],
        [`UPDATE herald.jobs SET requires = array_fill('t'::text, ARRAY[33])`, 'jobs_requires_count'],
        [`UPDATE herald.jobs SET max_attempts = 1001`, 'jobs_max_attempts_range'],
        [`UPDATE herald.jobs SET timeout_ms = 0`, 'jobs_timeout_range'],
        [`UPDATE herald.jobs SET idempotency_key = ''`, 'jobs_idempotency_key_length'],
        [`UPDATE herald.jobs SET on_parent_failure = 'ignore'`, 'jobs_on_parent_failure'],
        [`UPDATE herald.jobs SET progress = '{"percent": 101}'`, 'jobs_progress_shape'],
        [`INSERT INTO herald.jobs (kind, queue) VALUES ('k', 'a/b')`, 'jobs_queue_name'],
      ];
      for (const [bad, constraint] of refused) await expect(query(url, bad), bad).rejects.toMatchObject({ code: '23514', constraint });
      // Through the library, the words for each rule are the same as before.
      await expect(queue.enqueue({ kind: 'k', maxAttempts: 0 })).rejects.toThrow(/maxAttempts must be an integer from 1 to 1000/);
      // What stays a table check spans columns.
      const checks = await query<{ name: string }>(url, `SELECT conname AS name FROM pg_constraint WHERE conrelid = 'herald.jobs'::regclass AND contype = 'c' ORDER BY 1`);
      expect(checks.map((c) => c.name)).toEqual(['jobs_attempt_range', 'jobs_blocked_shape', 'jobs_queued_shape', 'jobs_running_shape', 'jobs_terminal_shape']);
    } finally {
      await pool.end();
      fs.rmSync(old, { recursive: true, force: true });
    }
  });

  it('upgrades the name checks in place: rows at the edges kept, the same rule enforced after', async () => {
    const old = migrationsBefore('0024_');
    const url = await freshDatabase('names');
    try {
      await migrate(url, old);
      const longest = 'n'.repeat(128);
      await query(url, `INSERT INTO herald.jobs (kind, queue, "group", tags) VALUES ('a.b:c-d_9', '${longest}', 'g', ARRAY['${longest}', 'x'])`);
      await query(url, `INSERT INTO herald.queues (queue, dead_letter) VALUES ('${longest}', 'dlq')`);
      await migrate(url);
      expect(await query(url, `SELECT kind, queue, "group", tags FROM herald.jobs`)).toEqual([
        { kind: 'a.b:c-d_9', queue: longest, group: 'g', tags: [longest, 'x'] },
      ]);
      for (const bad of [
        `UPDATE herald.jobs SET queue = '${longest}x'`,
        `UPDATE herald.jobs SET tags = ARRAY['${longest}x']`,
        `UPDATE herald.queues SET dead_letter = 'no spaces'`,
      ]) await expect(query(url, bad), bad).rejects.toMatchObject({ code: '23514' });
      // The bounded repetition is gone from every check (its cost is what the migration removes).
      const checks = await query<{ def: string }>(url, `
        SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = 'herald' AND c.contype = 'c' AND pg_get_constraintdef(c.oid) LIKE '%{1,128}%'`);
      expect(checks).toEqual([]);
    } finally {
      fs.rmSync(old, { recursive: true, force: true });
    }
  });

  it('upgrades the event log to partitions in place: same rows, the feed goes on, ids continue, retention drops the old table', async () => {
    const old = migrationsBefore('0021_');
    const url = await freshDatabase('events');
    const pool = createPool(url, { max: 2 });
    const queue = new Queue(pool);
    try {
      await migrate(url, old);
      // Finished and open jobs with their events, in the old, unpartitioned table.
      const jobs = await queue.enqueueMany([{ kind: 'a', queue: 'done' }, { kind: 'a', queue: 'done' }, { kind: 'b', queue: 'open' }]);
      const claimed = await claimByHand(url, 'done', 2);
      expect(await queue.complete('w:1:x', claimed.map((c) => ({ ...c, result: null })))).toEqual([]);
      const all = `SELECT id::text, job_id::text, tx::text, at, queue, kind, type::text, status::text, attempt, worker, data, flow_id
                   FROM herald.job_events ORDER BY tx, id`;
      const before = await query(url, all);
      expect(before).toHaveLength(7);
      const fed = await waitFor(async () => (await queue.feed()).length === 7 && queue.feed(), { what: 'the old events in the feed' });
      const last = fed.at(-1)!.cursor;
      await migrate(url);
      expect(await query(url, `SELECT relkind::text AS k FROM pg_class WHERE oid = 'herald.job_events'::regclass`)).toEqual([{ k: 'p' }]);
      expect(await query(url, all)).toEqual(before);
      expect(await query(url, `SELECT count(*)::int AS n FROM herald.job_events_0`)).toEqual([{ n: 7 }]);
      // The feed goes on from where it was: the new events only, with ids after the old ones.
      const { job } = await queue.enqueue({ kind: 'c', queue: 'open' });
      const next = await waitFor(async () => {
        const after = await queue.feed(parseCursor(last));
        return after.length > 0 && after;
      }, { what: 'the new event in the feed' });
      expect(next.map((e) => [e.jobId, e.type])).toEqual([[job.id, 'enqueued']]);
      expect(BigInt(next[0].eventId)).toBeGreaterThan(BigInt(before.at(-1)!.id));
      expect(await queue.feed()).toHaveLength(8);
      // Retention drops the old table whole once history has read it, keeping the open job's events.
      await waitFor(async () => {
        await rollupAll(queue, pool);
        await queue.cleanup(0);
        return (await query<{ gone: boolean }>(url, `SELECT to_regclass('herald.job_events_0') IS NULL AS gone`))[0].gone;
      }, { what: 'retention to drop the old table' });
      const left = await query<{ job_id: string }>(url, `SELECT job_id::text FROM herald.job_events ORDER BY tx, id`);
      expect(left.map((r) => r.job_id)).toEqual([jobs[2].job.id, job.id]);
      expect(await queue.retentionHorizon()).toEqual({ tx: before.at(-1)!.tx, id: before.at(-1)!.id });
    } finally {
      await pool.end();
      fs.rmSync(old, { recursive: true, force: true });
    }
  });
});

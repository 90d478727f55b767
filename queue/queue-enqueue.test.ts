// Enqueueing against real PostgreSQL: defaults, batches, idempotency keys, validation, and the
// CHECKs that refuse malformed rows whoever writes them.
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { ConflictError, ValidationError } from './errors.ts';

const db = useTestDatabase({ backoffBaseMs: 1000, backoffMaxMs: 60_000 }, { truncate: ['herald.jobs', 'herald.job_events'] });
const q = db.queue;

describe('enqueue', () => {
  it('stores a job with defaults and writes an enqueued event', async () => {
    const { job, created } = await q.enqueue({ kind: 'echo', payload: { a: 1 } });
    expect(created).toBe(true);
    expect(job).toMatchObject({
      queue: 'default', kind: 'echo', payload: { a: 1 }, priority: 0, status: 'queued',
      attempt: 0, maxAttempts: 5, requires: [], idempotencyKey: null, lockedBy: null,
      cancelRequested: false, progress: null, result: null, lastError: null,
    });
    expect(job.id).toMatch(/^\d+$/);
    const events = await q.events(job.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'enqueued', status: 'queued', attempt: 0, jobId: job.id });
  });

  it('stores group, tags, timeoutMs and expireAt; the database refuses bad ones whatever writes them', async () => {
    const { job } = await q.enqueue({ kind: 'k', group: 'g-1', tags: ['a', 'b.c'], timeoutMs: 250, expireAt: new Date('2030-01-01T00:00:00Z') });
    expect(job).toMatchObject({ group: 'g-1', tags: ['a', 'b.c'], timeoutMs: 250, expireAt: '2030-01-01T00:00:00.000Z', waitingFor: 'no_worker' });
    const later = await q.enqueue({ kind: 'k', runAt: new Date(Date.now() + 3_600_000) });
    expect(later.job.waitingFor).toBe('scheduled');
    await expect(q.enqueue({ kind: 'k', group: 'no spaces' })).rejects.toThrow(/^group must be 1-128/);
    await expect(q.enqueue({ kind: 'k', tags: Array(17).fill('t') })).rejects.toThrow(/^tags: at most 16/);
    await expect(q.enqueue({ kind: 'k', tags: ['ok', 'a,b'] })).rejects.toThrow(/^tags: at most 16/);
    await expect(q.enqueue({ kind: 'k', tags: [''] })).rejects.toThrow(/^tags: at most 16/);
    await expect(q.enqueue({ kind: 'k', timeoutMs: 0 })).rejects.toThrow(/^timeoutMs must be an integer from 1 to 86400000/);
    await expect(q.enqueue({ kind: 'k', expireAt: 'never' })).rejects.toThrow(/^expireAt "never" is not a valid ISO date/);
    // Raw SQL too: the CHECKs hold for writers that bypass the API.
    await expect(db.pool.query(`INSERT INTO herald.jobs (kind, tags) VALUES ('k', ARRAY['a', NULL])`)).rejects.toThrow(/jobs_tags_names/);
    await expect(db.pool.query(`INSERT INTO herald.jobs (kind, timeout_ms) VALUES ('k', 86400001)`)).rejects.toThrow(/jobs_timeout_range/);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(2);
  });

  it('is all or nothing for a batch', async () => {
    await expect(
      q.enqueueMany([{ kind: 'ok' }, { kind: 'bad kind!' }, { kind: 'ok2' }]),
    ).rejects.toBeInstanceOf(ValidationError);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(0);
  });

  it('returns a batch in input order', async () => {
    const res = await q.enqueueMany(Array.from({ length: 50 }, (_, i) => ({ kind: `k${i}`, idempotencyKey: i % 2 ? `key-${i}` : null })));
    expect(res.map((r) => r.job.kind)).toEqual(Array.from({ length: 50 }, (_, i) => `k${i}`));
  });

  it('returns the same job for a reused key, and 409s a different job under it', async () => {
    const a = await q.enqueue({ kind: 'echo', payload: { x: 1, y: 2 }, idempotencyKey: 'k1' });
    const b = await q.enqueue({ kind: 'echo', payload: { y: 2, x: 1 }, idempotencyKey: 'k1' });
    expect(b.created).toBe(false);
    expect(b.job.id).toBe(a.job.id);
    await expect(q.enqueue({ kind: 'echo', payload: { x: 2 }, idempotencyKey: 'k1' })).rejects.toBeInstanceOf(ConflictError);
    await expect(q.enqueue({ kind: 'other', payload: { x: 1, y: 2 }, idempotencyKey: 'k1' })).rejects.toBeInstanceOf(ConflictError);
    await expect(q.enqueue({ kind: 'echo', queue: 'q2', payload: { x: 1, y: 2 }, idempotencyKey: 'k1' })).rejects.toBeInstanceOf(ConflictError);
    // A batch that reuses a key wrongly is rejected whole.
    await expect(q.enqueueMany([{ kind: 'fresh' }, { kind: 'echo', payload: {}, idempotencyKey: 'k1' }])).rejects.toBeInstanceOf(ConflictError);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(1);
  });

  it('gives one job for 20 concurrent enqueues with one key', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, () => q.enqueue({ kind: 'echo', payload: { n: 1 }, idempotencyKey: 'same' })),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.job.id)).size).toBe(1);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(1);
  });

  it('coalesces concurrent single enqueues, and each still fails or succeeds alone', async () => {
    await q.enqueue({ kind: 'echo', payload: { v: 1 }, idempotencyKey: 'taken' });
    // A reused key conflicts alone; the statement carrying it goes through for the others.
    const first = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) =>
        i === 60 ? q.enqueue({ kind: 'echo', payload: { v: 2 }, idempotencyKey: 'taken' }) : q.enqueue({ kind: 'a', payload: { i } }),
      ),
    );
    expect(first[60]).toMatchObject({ status: 'rejected', reason: expect.any(ConflictError) });
    expect(first.filter((r) => r.status === 'fulfilled')).toHaveLength(99);
    // Fewer statements than calls: one 'enqueued' transaction per statement.
    const { rows: txs } = await db.pool.query(`SELECT count(DISTINCT tx)::int AS n FROM herald.job_events WHERE kind = 'a'`);
    expect(txs[0].n).toBeLessThan(10);
    // A row the database rejects fails its statement; the calls are retried alone and only it fails.
    const second = await Promise.allSettled(
      Array.from({ length: 100 }, (_, i) => (i === 50 ? q.enqueue({ kind: 'b', maxAttempts: 5000 }) : q.enqueue({ kind: 'b', payload: { i } }))),
    );
    expect(second[50]).toMatchObject({ status: 'rejected', reason: expect.any(ValidationError) });
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n, count(DISTINCT (payload->>'i'))::int AS d FROM herald.jobs WHERE kind = 'b'`);
    expect(rows[0]).toEqual({ n: 99, d: 99 });
  });

  it('rejects malformed input with a ValidationError and writes nothing', async () => {
    const bad = [
      { kind: '' },
      { kind: 'x'.repeat(129) },
      { kind: 'ok', queue: 'no spaces' },
      { kind: 'ok', priority: 40_000 },
      { kind: 'ok', maxAttempts: 0 },
      { kind: 'ok', maxAttempts: 1001 },
      { kind: 'ok', requires: Array.from({ length: 33 }, (_, i) => `t${i}`) },
      { kind: 'ok', runAt: 'not a date' },
      { kind: 'ok', idempotencyKey: '' },
    ];
    for (const input of bad) await expect(q.enqueue(input), JSON.stringify(input).slice(0, 80)).rejects.toBeInstanceOf(ValidationError);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs');
    expect(rows[0].n).toBe(0);
  });
});

describe('row-shape checks', () => {
  it('refuse malformed rows written directly', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const attempts = [
      `UPDATE herald.jobs SET locked_by = 'x' WHERE id = ${job.id}`, // queued with a lock
      `UPDATE herald.jobs SET finished_at = now() WHERE id = ${job.id}`, // queued but finished
      `UPDATE herald.jobs SET status = 'running' WHERE id = ${job.id}`, // running without owner or lease
      `UPDATE herald.jobs SET status = 'succeeded' WHERE id = ${job.id}`, // terminal without finish time
      `UPDATE herald.jobs SET attempt = 6 WHERE id = ${job.id}`, // more attempts than allowed
      `UPDATE herald.jobs SET progress = '{"percent": 101}' WHERE id = ${job.id}`,
    ];
    for (const sql of attempts) await expect(db.pool.query(sql), sql).rejects.toMatchObject({ code: '23514' });
  });

  it('hold names and tags to 1-128 of [A-Za-z0-9_.:-] in the database, at the edges too', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const longest = 'n'.repeat(128);
    const set = (assignment: string) => `UPDATE herald.jobs SET ${assignment} WHERE id = ${job.id}`;
    const refused = [
      set(`queue = '${longest}x'`),
      set(`queue = 'no spaces'`),
      set(`kind = ''`),
      set(`"group" = 'é'`),
      set(`tags = ARRAY['ok', '${longest}x']`),
      set(`tags = ARRAY['${longest}x']`),
      set(`tags = ARRAY['a,b']`),
      set(`tags = ARRAY['']`),
      set(`tags = ARRAY['ok', NULL]`),
      `INSERT INTO herald.queues (queue) VALUES ('${longest}x')`,
      `INSERT INTO herald.schedules (name, cron, job) VALUES ('bad name', '* * * * *', '{}')`,
    ];
    for (const sql of refused) await expect(db.pool.query(sql), sql).rejects.toMatchObject({ code: '23514' });
    await db.pool.query(set(`queue = '${longest}', kind = 'a.b:c-d_9', "group" = '${longest}', tags = ARRAY['${longest}', 'x', '${longest}']`));
    const { rows } = await db.pool.query<{ queue: string; tags: string[] }>(`SELECT queue, tags FROM herald.jobs WHERE id = ${job.id}`);
    expect(rows[0]).toEqual({ queue: longest, tags: [longest, 'x', longest] });
  });
});

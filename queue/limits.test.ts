// Queue settings, the limited claim, expiry and the timeout's lease cap, against real
// PostgreSQL, in one process. test/queue-control.test.ts proves the limits across worker processes.
import { beforeEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { useTestDatabase } from '../test/support/db.ts';
import { claimJobs } from './sql/claim.ts';
import { enqueueJobs } from './sql/enqueue.ts';
import { toRecord } from './services/insert.ts';

const db = useTestDatabase({}, { truncate: ['herald.jobs', 'herald.job_events', 'herald.queues', 'herald.queue_starts', 'herald.workers'] });
const q = db.queue;
const W = 'host:1:aaaa';
const registration = { id: W, host: 'host', pid: 1, queues: null, kinds: ['k'], capabilities: [], concurrency: 4, lockKey: null };

beforeEach(async () => {
  // A live worker for kind k: without one every queued job would be waiting for no_worker.
  await q.registerWorker(registration);
});
const claimLimited = (queue: string, limit = 10) => q.claimLimited(queue, { worker: W, limit });
const ids = (jobs: { id: string }[]) => jobs.map((j) => j.id);
const enqueueN = async (n: number, extra: { queue?: string; group?: string } = {}) =>
  ids((await q.enqueueMany(Array.from({ length: n }, () => ({ kind: 'k', queue: 'lim', ...extra })))).map((e) => e.job));

describe('queue settings', () => {
  it('patches a queue with no jobs; absent keys stay, null clears', async () => {
    const a = await q.patchQueue('empty', { concurrency: 3, rateLimit: { count: 5, periodMs: 1000 } });
    expect(a).toEqual({
      queue: 'empty', queued: 0, scheduled: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, blocked: 0,
      paused: false, concurrency: 3, groupConcurrency: null, rateLimit: { count: 5, periodMs: 1000 }, deadLetter: null,
      // The core API without an actor records the time of the change but not who made it.
      updatedBy: null, updatedAt: expect.any(String),
    });
    const b = await q.patchQueue('empty', { paused: true, groupConcurrency: 2 });
    expect(b).toMatchObject({ paused: true, concurrency: 3, groupConcurrency: 2, rateLimit: { count: 5, periodMs: 1000 } });
    const c = await q.patchQueue('empty', { concurrency: null, rateLimit: null, paused: false });
    expect(c).toMatchObject({ paused: false, concurrency: null, groupConcurrency: 2, rateLimit: null });
    expect((await q.counts()).map((e) => e.queue)).toEqual(['empty']);
    // The gate lists exactly the queues the plain claim must leave alone.
    expect((await db.pool.query('SELECT held FROM herald.queue_gate')).rows[0].held).toEqual(['empty']);
    await q.patchQueue('empty', { groupConcurrency: null });
    expect((await db.pool.query('SELECT held FROM herald.queue_gate')).rows[0].held).toEqual([]);
  });

  it('the database refuses out-of-range settings whatever writes them', async () => {
    await expect(q.patchQueue('x', { concurrency: 0 })).rejects.toThrow(/^concurrency must be an integer from 1 to 10000/);
    await expect(q.patchQueue('x', { rateLimit: { count: 1, periodMs: 99 } })).rejects.toThrow(/^rateLimit.periodMs must be/);
    await expect(db.pool.query(`INSERT INTO herald.queues (queue, rate_count) VALUES ('x', 5)`)).rejects.toThrow(/queues_rate_both/);
    expect(await q.counts()).toEqual([]);
  });
});

describe('the plain claim', () => {
  it("the gate's test does not shrink the planner's estimate, even when the table holds one queue only", async () => {
    // With one queue, the column's statistics (ndistinct 1) could make the gate's test look as
    // if it matched no row; the planner would then sort the whole queue instead of walking the
    // claim-order index. The estimate with the test must stay that of the claim without it.
    await db.pool.query(`INSERT INTO herald.jobs (kind) SELECT 'k' FROM generate_series(1, 5000)`);
    await db.pool.query('ANALYZE herald.jobs');
    const values = [null, [], 16, W, null, 30_000, ['k']];
    const estimate = async (text: string) => {
      const { rows } = await db.pool.query({ text: `EXPLAIN ${text}`, values });
      const scan = rows.map((r) => r['QUERY PLAN'] as string).find((l) => /Scan (using jobs_claim_order )?on jobs /.test(l))!;
      return Number(/rows=(\d+)/.exec(scan)![1]);
    };
    const withoutGate = claimJobs.claimed.text.replace(/^.*held FROM gate.*$/m, '');
    expect(withoutGate).not.toEqual(claimJobs.claimed.text);
    expect(await estimate(claimJobs.claimed.text)).toBeGreaterThanOrEqual(0.8 * (await estimate(withoutGate)));
  });

  it('leaves paused and limited queues alone, and takes them again once cleared', async () => {
    await q.enqueueMany([{ kind: 'k', queue: 'free' }, { kind: 'k', queue: 'paused' }, { kind: 'k', queue: 'limited' }]);
    await q.patchQueue('paused', { paused: true });
    await q.patchQueue('limited', { concurrency: 5 });
    expect((await q.claim({ worker: W, limit: 10 })).map((j) => j.queue)).toEqual(['free']);
    await q.patchQueue('paused', { paused: false });
    await q.patchQueue('limited', { concurrency: null });
    expect((await q.claim({ worker: W, limit: 10 })).map((j) => j.queue).sort()).toEqual(['limited', 'paused']);
  });

  it('never starts a job past its expireAt; the expiry pass cancels it with an expired event', async () => {
    const past = new Date(Date.now() - 1000);
    const { job: stale } = await q.enqueue({ kind: 'k', expireAt: past });
    const { job: fresh } = await q.enqueue({ kind: 'k', expireAt: new Date(Date.now() + 3_600_000) });
    expect(ids(await q.claim({ worker: W, limit: 10 }))).toEqual([fresh.id]);
    expect(await q.expire()).toBe(1);
    const after = await q.get(stale.id);
    expect(after).toMatchObject({ status: 'cancelled', attempt: 0, lastError: { reason: 'expired' } });
    const events = await q.events(stale.id);
    expect(events.map((e) => e.type)).toEqual(['enqueued', 'expired']);
    expect(events[1]).toMatchObject({ status: 'cancelled', data: { expireAt: expect.any(String) } });
    // Retried, then cancelled by hand: that is a plain cancel, not a second expiry.
    await q.retry(stale.id);
    await q.cancel(stale.id);
    expect((await q.events(stale.id)).map((e) => e.type)).toEqual(['enqueued', 'expired', 'retried', 'cancelled']);
  });
});

describe('the limited claim', () => {
  it('a paused queue gives nothing', async () => {
    await enqueueN(3);
    await q.patchQueue('lim', { paused: true });
    expect((await claimLimited('lim')).jobs).toEqual([]);
    await q.patchQueue('lim', { paused: false, concurrency: 2 });
    expect((await claimLimited('lim')).jobs).toHaveLength(2);
  });

  it('concurrency: never more running than the limit, slots come back when jobs end', async () => {
    const all = await enqueueN(5);
    await q.patchQueue('lim', { concurrency: 2 });
    const first = (await claimLimited('lim')).jobs;
    expect(ids(first)).toEqual(all.slice(0, 2));
    expect((await claimLimited('lim')).jobs).toEqual([]);
    expect((await q.get(all[2]))!.waitingFor).toBe('concurrency');
    await q.complete(W, [{ id: first[0].id, attempt: 1, result: null }]);
    expect(ids((await claimLimited('lim')).jobs)).toEqual([all[2]]);
  });

  it('groupConcurrency: each group gets its own slots, and a busy group does not hide the others', async () => {
    const a = await enqueueN(4, { group: 'a' });
    const b = await enqueueN(2, { group: 'b' });
    const none = await enqueueN(1);
    await q.patchQueue('lim', { groupConcurrency: 1 });
    expect(ids((await claimLimited('lim')).jobs).sort()).toEqual([a[0], b[0], none[0]].sort());
    expect((await claimLimited('lim')).jobs).toEqual([]);
    expect((await q.get(a[1]))!.waitingFor).toBe('group_concurrency');
    await q.complete(W, [{ id: b[0], attempt: 1, result: null }]);
    expect(ids((await claimLimited('lim')).jobs)).toEqual([b[1]]);
  });

  it('rateLimit: at most count starts per window, and says when the window frees', async () => {
    const all = await enqueueN(5);
    await q.patchQueue('lim', { rateLimit: { count: 3, periodMs: 60_000 } });
    const first = await claimLimited('lim', 2);
    expect(ids(first.jobs)).toEqual(all.slice(0, 2));
    expect(first.retryAt).toBeNull();
    // Finishing jobs frees no rate budget: it counts starts.
    await q.complete(W, first.jobs.map((j) => ({ id: j.id, attempt: 1, result: null })));
    const second = await claimLimited('lim');
    expect(ids(second.jobs)).toEqual([all[2]]);
    const startedAt = new Date(first.jobs[0].startedAt!).getTime();
    expect(second.retryAt!.getTime()).toBeGreaterThanOrEqual(startedAt + 60_000);
    expect(second.retryAt!.getTime()).toBeLessThan(startedAt + 61_000);
    expect((await claimLimited('lim')).jobs).toEqual([]);
    expect((await q.get(all[3]))!.waitingFor).toBe('rate_limit');
  });

  it('two claimers that each see free slots take turns: the limit holds at every commit', async () => {
    await enqueueN(40);
    await q.patchQueue('lim', { concurrency: 3 });
    // Ten concurrent claims, each asking for 3: together they may start only 3.
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => q.claimLimited('lim', { worker: `w${i}`, limit: 3 })));
    expect(results.reduce((n, r) => n + r.jobs.length, 0)).toBe(3);
  });
});

describe('waitingFor', () => {
  it('names the first thing that holds a queued job back', async () => {
    const { job: later } = await q.enqueue({ kind: 'k', runAt: new Date(Date.now() + 3_600_000) });
    expect(later.waitingFor).toBe('scheduled');
    const { job: otherKind } = await q.enqueue({ kind: 'unknown-kind' });
    expect(otherKind.waitingFor).toBe('no_worker');
    const { job: gpu } = await q.enqueue({ kind: 'k', requires: ['gpu'] });
    expect(gpu.waitingFor).toBe('no_worker');
    const { job: plain } = await q.enqueue({ kind: 'k', queue: 'p' });
    expect(plain.waitingFor).toBeNull();
    await q.patchQueue('p', { paused: true });
    expect((await q.get(plain.id))!.waitingFor).toBe('paused');
    expect((await q.list({ queue: 'p' })).jobs[0].waitingFor).toBe('paused');
  });

  it('a registered worker counts while it holds its liveness lock and refreshes its row', async () => {
    const { job } = await q.enqueue({ kind: 'k' });
    expect((await q.get(job.id))!.waitingFor).toBeNull();
    // A worker row whose liveness key nobody holds: not listed, and the maintenance pass removes it.
    await q.registerWorker({ ...registration, lockKey: 424_242 });
    expect(await q.workers()).toEqual([]);
    expect(await q.pruneWorkers()).toEqual([W]);
    expect((await q.get(job.id))!.waitingFor).toBe('no_worker');
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1, $2)', [0x48524c44, 424_242]);
      await q.registerWorker({ ...registration, lockKey: 424_242 });
      expect((await q.get(job.id))!.waitingFor).toBeNull();
      expect(await q.workers()).toMatchObject([{ worker: W, host: 'host', pid: 1, kinds: ['k'], concurrency: 4, running: 0, jobs: [] }]);
      expect(await q.pruneWorkers()).toEqual([]);
      // Alive, but silent for too long (a frozen process): gone as well.
      await db.pool.query(`UPDATE herald.workers SET last_seen_at = now() - interval '1 minute'`);
      expect((await q.get(job.id))!.waitingFor).toBe('no_worker');
      expect(await q.workers()).toEqual([]);
      expect(await q.pruneWorkers()).toEqual([W]);
    } finally {
      await holder.end();
    }
  });
  it('counts each limit once per queue, not once per returned row (enqueue replies included)', async () => {
    await q.patchQueue('rated', { rateLimit: { count: 5, periodMs: 60_000 } });
    await q.patchQueue('conc', { concurrency: 1, groupConcurrency: 1 });
    await db.pool.query(`INSERT INTO herald.queue_starts (queue, at) SELECT 'rated', now() FROM generate_series(1, 5)`);
    const [busy] = await q.enqueueMany([{ kind: 'k', queue: 'conc', group: 'g1' }]);
    expect((await q.claimLimited('conc', { worker: W, limit: 1 })).jobs.map((j) => j.id)).toEqual([busy.job.id]);
    await q.patchQueue('conc', { concurrency: 2 });
    const records = Array.from({ length: 1000 }, (_, i) =>
      i % 2 ? { kind: 'k', queue: 'rated' } : { kind: 'k', queue: 'conc', group: i % 4 ? 'g2' : 'g1' },
    );
    // One transaction, so pg_stat_xact_user_tables counts the scans of this statement alone.
    const c = await db.pool.connect();
    try {
      await c.query('BEGIN');
      const { rows } = await c.query(enqueueJobs.text, [JSON.stringify(records.map(toRecord))]);
      const { rows: scans } = await c.query<{ relname: string; scans: string }>(
        `SELECT relname, (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::text AS scans
         FROM pg_stat_xact_user_tables WHERE schemaname = 'herald' AND relname IN ('jobs', 'queue_starts')`,
      );
      await c.query('COMMIT');
      const reasons = new Map<string, number>();
      for (const r of rows as { queue: string; group: string | null; waiting_for: string | null }[]) {
        const key = `${r.queue}/${r.group}/${r.waiting_for}`;
        reasons.set(key, (reasons.get(key) ?? 0) + 1);
      }
      // rated: the window is full; conc: 1 of 2 slots taken, but g1's one slot is.
      expect(Object.fromEntries(reasons)).toEqual({ 'rated/null/rate_limit': 500, 'conc/g1/group_concurrency': 250, 'conc/g2/null': 250 });
      const byTable = Object.fromEntries(scans.map((s) => [s.relname, Number(s.scans)]));
      // A few scans per queue, whatever the batch: counted per row, this was 501 and 1,016. How many a
      // plan takes varies with the table's statistics and the triggers' own lookups (2 to 4 per queue
      // on queue_starts, 30 to 52 on jobs seen), so the bound is a tenth of the per-row count.
      expect(byTable.queue_starts).toBeLessThanOrEqual(records.length / 20);
      expect(byTable.jobs).toBeLessThanOrEqual(records.length / 10);
    } finally {
      c.release();
    }
  });
});

describe('timeoutMs in the database', () => {
  it('caps the lease at the timeout (plus grace), and the reaper ends the attempt as a timeout', async () => {
    const { job } = await q.enqueue({ kind: 'k', timeoutMs: 100 });
    const [c] = await q.claim({ worker: W, limit: 1, leaseMs: 60_000 });
    const leaseMs = new Date(c.leaseExpiresAt!).getTime() - new Date(c.startedAt!).getTime();
    expect(leaseMs).toBeGreaterThanOrEqual(100);
    expect(leaseMs).toBeLessThan(5_000);
    // Renewals keep the cap too.
    await q.heartbeat(W, [{ id: c.id, attempt: 1 }], 60_000);
    const renewed = (await q.get(c.id))!;
    expect(new Date(renewed.leaseExpiresAt!).getTime()).toBe(new Date(c.leaseExpiresAt!).getTime());
    // Past the cap, the reaper ends the attempt and says why.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`SELECT pg_sleep(greatest(0, extract(epoch FROM $1::timestamptz - now())) + 0.05)`, [renewed.leaseExpiresAt]);
    } finally {
      await client.end();
    }
    expect(await q.reap()).toMatchObject({ requeued: 1 });
    const events = await q.events(job.id);
    expect(events.at(-1)).toMatchObject({ type: 'lease_expired', data: { reason: 'timeout', error: expect.stringMatching(/timed out after 100 ms/) } });
  });
});

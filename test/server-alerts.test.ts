// The alert conditions from the server's own view (GET /api/alerts) and the metrics the rules
// read (/metrics): stalled queues, ready jobs no live worker runs (a queue nobody takes, a kind
// nobody knows), failures for good, lease expiries.
// HeraldStreamHeld needs a transaction open for a minute; its source (the stream's holder) is
// tested in server-health.test.ts, and its rule in ops/prometheus/alerts.test.yml.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer();
});
afterAll(() => s.close());
beforeEach(async () => {
  await s.db.pool.query('TRUNCATE herald.jobs, herald.workers, herald.queues');
});

interface AlertJson { alert: string; queue: string | null; summary: string; runbook: string }
const alerts = async (): Promise<AlertJson[]> => (await s.app.inject({ method: 'GET', url: '/api/alerts' })).json().alerts;
const metrics = async () => (await s.app.inject({ method: 'GET', url: '/metrics' })).body;
const tenMinutesAgo = () => new Date(Date.now() - 600_000).toISOString();

describe('GET /api/alerts', () => {
  it('names queues whose ready jobs wait too long, and those no live worker takes; not paused or dead-letter queues', async () => {
    expect(await alerts()).toEqual([]);
    const q = s.queue;
    await q.enqueue({ kind: 'k', queue: 'orphans', runAt: tenMinutesAgo() });
    await q.enqueue({ kind: 'k', queue: 'served', runAt: tenMinutesAgo() });
    await q.enqueue({ kind: 'k', queue: 'fresh' });
    await q.enqueue({ kind: 'k', queue: 'later', runAt: new Date(Date.now() + 3_600_000) });
    await q.enqueue({ kind: 'k', queue: 'parked', runAt: tenMinutesAgo() });
    await q.patchQueue('parked', { paused: true });
    await q.enqueue({ kind: 'k', queue: 'src.dead', runAt: tenMinutesAgo() });
    await q.patchQueue('src', { deadLetter: 'src.dead' });
    await q.registerWorker({ id: 'h:1:served', host: 'h', pid: 1, queues: ['served'], kinds: ['k'], capabilities: [], concurrency: 1, lockKey: null });

    // Queue heads are read at most once a second (shared with /metrics): wait for a fresh read.
    await waitFor(async () => (await alerts()).length > 0, { what: '(await alerts()).length > 0' });
    const now = await alerts();
    // A queue nobody takes is no stall: its jobs are HeraldNoWorker's.
    expect(now.map((a) => `${a.alert} ${a.queue}`).sort()).toEqual(['HeraldNoWorker orphans', 'HeraldQueueStalled served']);
    expect(now.find((a) => a.alert === 'HeraldNoWorker')).toMatchObject({
      summary: expect.stringMatching(/^the oldest ready job of queue orphans \(kind k\) has waited 6\d\d s: no live worker takes queue orphans$/),
      runbook: 'docs/alerts.md#heraldnoworker',
    });

    const text = await metrics();
    expect(text).toMatch(/^herald_queue_no_worker_age_seconds\{queue="orphans",kind="k"\} 6\d\d(\.\d+)?$/m);
    expect(text).not.toMatch(/^herald_queue_oldest_ready_age_seconds\{queue="orphans"\}/m);
    expect(text).toMatch(/^herald_queue_live_workers\{queue="orphans"\} 0$/m);
    expect(text).toMatch(/^herald_queue_live_workers\{queue="served"\} 1$/m);
    expect(text).toMatch(/^herald_queue_no_worker_age_seconds\{queue="fresh",kind="k"\} \d(\.\d+)?(e-\d+)?$/m);
    expect(text).not.toMatch(/^herald_queue_\w+\{queue="(later|parked|src\.dead)"/m);
  });

  // Catches: queue heads that judge the stall on the oldest ready job whatever runs it (one job of
  // a mistyped kind made the whole queue HeraldQueueStalled), and a walk that does not look past it.
  it('a job of a kind no live worker knows is HeraldNoWorker with its kind, not a stall of its queue; the stall looks past it', async () => {
    const q = s.queue;
    await q.registerWorker({ id: 'h:3:echo', host: 'h', pid: 3, queues: null, kinds: ['echo'], capabilities: [], concurrency: 1, lockKey: null });
    // Live for the whole test however slow the machine (a row without a lock is live while fresh).
    await s.db.pool.query(`UPDATE herald.workers SET last_seen_at = now() + interval '1 hour'`);
    await q.enqueue({ kind: 'ech0', queue: 'default', runAt: tenMinutesAgo() });
    await q.enqueue({ kind: 'echo', queue: 'default', requires: ['gpu'], runAt: tenMinutesAgo() });
    await q.enqueue({ kind: 'echo', queue: 'default' });
    // The heads read of the test before may still be served (one a second): wait for this one's.
    await waitFor(async () => (await alerts()).some((a) => a.queue === 'default'), { what: 'an alert of queue default' });
    expect(await alerts()).toEqual([
      {
        alert: 'HeraldNoWorker', queue: 'default', runbook: 'docs/alerts.md#heraldnoworker',
        summary: expect.stringMatching(/^the oldest ready job of queue default \(kind ech0\) has waited 6\d\d s: no live worker of queue default runs kind ech0 \(or has the capabilities it requires\)$/),
      },
    ]);
    let text = await metrics();
    expect(text).toMatch(/^herald_queue_no_worker_age_seconds\{queue="default",kind="ech0"\} 6\d\d(\.\d+)?$/m);
    expect(text).toMatch(/^herald_queue_oldest_ready_age_seconds\{queue="default"\} \d(\.\d+)?(e-\d+)?$/m);
    expect(text).toMatch(/^herald_queue_live_workers\{queue="default"\} 1$/m);

    // An echo job the worker runs, ready for 9 minutes, behind the two it cannot: a stall.
    await q.enqueue({ kind: 'echo', queue: 'default', runAt: new Date(Date.now() - 540_000).toISOString() });
    await waitFor(async () => (await alerts()).length === 2, { what: 'two alerts of queue default' });
    expect((await alerts()).map((a) => `${a.alert} ${a.queue}`)).toEqual(['HeraldQueueStalled default', 'HeraldNoWorker default']);
    text = await metrics();
    expect(text).toMatch(/^herald_queue_oldest_ready_age_seconds\{queue="default"\} 5\d\d(\.\d+)?$/m);
  });

  it('names a queue whose jobs fail for good, and lease expiries, as the stream shows them', async () => {
    const q = s.queue;
    const W = 'h:2:w';
    const jobs = await q.enqueueMany(Array.from({ length: 8 }, (_, i) => ({ kind: 'k', queue: 'billing', maxAttempts: 1, payload: { i } })));
    const claimed = await q.claim({ worker: W, queues: ['billing'], limit: 8 });
    expect(claimed).toHaveLength(8);
    // 5 fail for good, 3 are reaped out of their last attempt.
    await q.fail(W, claimed.slice(0, 5).map((j) => ({ id: j.id, attempt: j.attempt, error: 'declined' })));
    await s.db.pool.query(`UPDATE herald.jobs SET lease_expires_at = now() - interval '1 s' WHERE status = 'running'`);
    expect(await q.reap()).toMatchObject({ failed: 3 });
    expect(jobs).toHaveLength(8);

    // Queue heads are cached for a second: the test before's two alerts of queue default may still be served.
    const names = async () => (await alerts()).map((a) => `${a.alert} ${a.queue}`).sort().join(', ');
    await waitFor(async () => (await names()) === 'HeraldJobsFailing billing, HeraldWorkersDying null', { what: 'the failing and dying alerts alone' });
    const now = await alerts();
    expect(now).toContainEqual(expect.objectContaining({ alert: 'HeraldJobsFailing', queue: 'billing', summary: expect.stringMatching(/^8 of 8 jobs of queue billing failed for good/) }));
    expect(now).toContainEqual(expect.objectContaining({ alert: 'HeraldWorkersDying', queue: null, summary: expect.stringMatching(/^3 leases expired in the last 15 min/) }));
    const text = await metrics();
    expect(text).toMatch(/^herald_jobs_lease_expired_total\{queue="billing",reason="lease_expired"\} 3$/m);
    expect(text).toMatch(/^herald_jobs_failed_total\{queue="billing",outcome="failed"\} 8$/m);
  });
});

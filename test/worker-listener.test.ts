// Waking up: the listener survives pg_terminate_backend, and without LISTEN the worker polls.
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/db.ts';
import { workerTestContext, type WorkerProcess } from './fixtures/worker-process.ts';
import { sessionPid, terminateSession } from './support/sessions.ts';
import { waitFor } from './support/wait.ts';
import { JOBS_CHANNEL, wakeTarget } from '../queue/channels.ts';

const t = workerTestContext();

const succeeded = (id: string, what: string, timeoutMs?: number) =>
  waitFor(async () => (await t.db.queue.get(id))?.status === 'succeeded', { what: what, timeoutMs: timeoutMs });

const listenerPid = (w: WorkerProcess) => sessionPid(t.db.pool, `herald:worker-listener:${w.pid}`);

describe('listener', () => {
  it('recovers from pg_terminate_backend, catches up on what it missed, and still starts jobs at once', async () => {
    // A minute between polls: anything that runs within the waits below was woken by NOTIFY
    // or by the catch-up claim after the reconnect.
    const { db } = t;
    const w = await t.spawn({ env: { HERALD_POLL_MS: '60000' } });
    const { job: before } = await db.queue.enqueue({ kind: 'echo', payload: { n: 1 } });
    await succeeded(before.id, 'a job before the kill', 10_000);

    const pid = await listenerPid(w);
    expect(pid).not.toBeNull();
    await terminateSession(db.pool, pid!);
    // Enqueued while the listener is down: its NOTIFY is lost; the claim after reconnecting finds it.
    const { job: missed } = await db.queue.enqueue({ kind: 'echo', payload: { n: 2 } });
    await w.waitForLog((l) => l.msg === 'listener reconnected');
    await succeeded(missed.id, 'the job enqueued while the listener was down', 10_000);

    const newPid = await listenerPid(w);
    expect(newPid).not.toBeNull();
    expect(newPid).not.toBe(pid);
    const { job: after } = await db.queue.enqueue({ kind: 'echo', payload: { n: 3 } });
    await succeeded(after.id, 'a job after the reconnect', 10_000);
    await w.waitForLog((l) => l.msg === 'claim' && l.claimed === 1 && String(l.reason).startsWith('notify'));
    await w.stop();
  });
});

describe('catching up after connecting', () => {
  it('the first claim passes the barrier of every queue with jobs, so a producer that skipped its NOTIFY meanwhile is waited for', async () => {
    const { db } = t;
    // A job of "caught-up" is counted, as a notification's sender is once it has committed.
    const { job } = await db.queue.enqueue({ kind: 'echo', queue: 'caught-up' });
    // A producer that committed beside that sender skipped its own NOTIFY and holds the queue's
    // barrier until its commit ends; a session of the test holds it instead, throughout.
    const holder = await db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock_shared(herald.wake_key($1, 1))', [wakeTarget(JOBS_CHANNEL, 'caught-up')]);
      // A minute between polls, and no notification for the queue: only the barrier pass of the
      // first claim (a worker of all queues reads them from the counts) names it.
      const w = await t.spawn({ env: { HERALD_POLL_MS: '60000' } });
      const gaveUp = await w.waitForLog((l) => l.msg === 'gave up waiting at a wake-up barrier; waiting again');
      expect(gaveUp.queues).toContain('caught-up');
      // Never let through, it gave up: the claim behind it still ran, and took the committed job.
      await succeeded(job.id, 'the job of the queue behind the barrier', 10_000);
      await w.stop();
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  });
});

describe('poll-only mode', () => {
  // Its timeout is longer than its steps' own waits (a start, a 2 s probe, a database dropped, a
  // job, a log line), so a stalled step fails with its own message and the worker's last lines.
  it('warns once that it cannot LISTEN, and runs jobs by polling', async () => {
    // The "direct" session is another database, so the NOTIFY probe sent through the query pool
    // never reaches it: exactly what a transaction pooler does. (A closed port would not do:
    // the CLI runs migrations on the listen URL.)
    const { db } = t;
    const elsewhere = await createTestDatabase();
    const w = await t.spawn({
      env: { HERALD_LISTEN_URL: elsewhere.url, HERALD_POLL_MS: '200' },
      args: ['--queues', 'polled'],
    }).finally(() => elsewhere.drop());
    const warnings = w.logs.filter((l) => l.level === 40 && /cannot LISTEN/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(w.logs.find((l) => l.msg === 'worker started')).toMatchObject({ listening: false });
    const { job } = await db.queue.enqueue({ kind: 'echo', queue: 'polled', payload: { polled: true } });
    await succeeded(job.id, 'the polled job');
    expect(await db.queue.get(job.id)).toMatchObject({ result: { polled: true }, lockedBy: null });
    // Claimed by a poll, by the start's claim, or by the look back after an empty claim (a job
    // enqueued while a claim ran is found by nextRunAt and claimed as 'scheduled'): never by a
    // notification (reason 'notify <queue>').
    await w.waitForLog((l) => l.msg === 'claim' && l.claimed === 1 && typeof l.reason === 'string' && !l.reason.startsWith('notify '));
  }, 150_000);
});

// A job's life against real PostgreSQL: running, progress, heartbeats, retries with backoff,
// release, cancel and retry.
import { describe, expect, it } from 'vitest';
import { createTestDatabase, useTestDatabase } from '../test/support/db.ts';
import { ConflictError, NotFoundError } from './errors.ts';
import type { Queue } from './queue.ts';

const db = useTestDatabase({ backoffBaseMs: 1000, backoffMaxMs: 60_000 }, { truncate: ['herald.jobs', 'herald.job_events'] });
const q = db.queue;

const W = 'host:1:aaaa';
const types = async (id: string) => (await q.events(id)).map((e) => e.type);

/** The backoff of a job's last retry in ms: its run time less the time of its retry_scheduled event (one transaction, one clock). */
async function backoffOf(queue: Queue, id: string): Promise<number> {
  const events = await queue.events(id);
  const retry = events.filter((e) => e.type === 'retry_scheduled').at(-1)!;
  return new Date((await queue.get(id))!.runAt).getTime() - new Date(retry.at).getTime();
}

describe('running a job', () => {
  it('goes queued → running → progress → succeeded', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    expect((await q.progress(W, c, 40, 'reading')).held).toBe(true);
    expect((await q.get(job.id))!.progress).toEqual({ percent: 40, message: 'reading' });
    expect(await q.complete(W, [{ ...c, result: { ok: true } }])).toEqual([]);
    const done = (await q.get(job.id))!;
    expect(done).toMatchObject({ status: 'succeeded', result: { ok: true }, lockedBy: null, leaseExpiresAt: null });
    expect(done.finishedAt).not.toBeNull();
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'progress', 'succeeded']);
  });

  it('heartbeats extend the lease and write no event', async () => {
    await q.enqueue({ kind: 'echo' });
    const [c] = await q.claim({ worker: W, limit: 1, leaseMs: 1_000 });
    const { held } = await q.heartbeat(W, [c], 60_000);
    expect(held.has(c.id)).toBe(true);
    // Measured on the database's clock: the lease now ends a minute after the renewal.
    const { rows } = await db.pool.query(`SELECT lease_expires_at - now() > interval '50 seconds' AS renewed FROM herald.jobs WHERE id = $1`, [c.id]);
    expect(rows[0].renewed).toBe(true);
    expect(await types(c.id)).toEqual(['enqueued', 'claimed']);
  });

  it('retries a failure with backoff, then fails when attempts run out', async () => {
    const { job } = await q.enqueue({ kind: 'fail', maxAttempts: 2 });
    const [c1] = await q.claim({ worker: W, limit: 1 });
    expect(await q.fail(W, [{ ...c1, error: new Error('boom') }])).toEqual([]);
    let j = (await q.get(job.id))!;
    expect(j.status).toBe('queued');
    expect(j.lastError).toMatchObject({ message: 'boom', name: 'Error' });
    expect(j.lastError!.stack).toContain('boom');
    // The backoff, read on the database's clock: base 1 s less up to 20% jitter.
    const delay = await backoffOf(q, job.id);
    expect(delay).toBeGreaterThanOrEqual(800);
    expect(delay).toBeLessThanOrEqual(1_000);
    // Skip the backoff: run it now, which the timeline records as 'promoted'.
    expect(await q.runNow(job.id)).toMatchObject({ id: job.id, status: 'queued' });
    const [c2] = await q.claim({ worker: W, limit: 1 });
    expect(c2.attempt).toBe(2);
    await q.fail(W, [{ ...c2, error: 'still broken' }]);
    j = (await q.get(job.id))!;
    expect(j).toMatchObject({ status: 'failed', attempt: 2, lastError: { message: 'still broken' } });
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'retry_scheduled', 'promoted', 'claimed', 'failed']);
  });

  // Mutation caught: toJob passing last_error through for a succeeded job (`lastError: r.last_error`).
  it('a job that succeeds after a failed attempt shows no error; its timeline keeps it', async () => {
    const { job } = await q.enqueue({ kind: 'flaky', maxAttempts: 2 });
    const [c1] = await q.claim({ worker: W, limit: 1 });
    await q.fail(W, [{ ...c1, error: new Error('first try') }]);
    // Skip the backoff: run it now, which the timeline records as 'promoted'.
    expect(await q.runNow(job.id)).toMatchObject({ id: job.id, status: 'queued' });
    const [c2] = await q.claim({ worker: W, limit: 1 });
    await q.complete(W, [{ ...c2, result: 'ok' }]);
    expect((await q.get(job.id))!).toMatchObject({ status: 'succeeded', result: 'ok', lastError: null });
    const retry = (await q.events(job.id)).find((e) => e.type === 'retry_scheduled')!;
    expect(JSON.stringify(retry.data)).toContain('first try');
  });

  it('fails at once on a final error', async () => {
    const { job } = await q.enqueue({ kind: 'fail' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    await q.fail(W, [{ ...c, error: new Error('bad payload'), final: true }]);
    expect((await q.get(job.id))!.status).toBe('failed');
  });

  it('backoff doubles per attempt and is capped', async () => {
    const db2 = await createTestDatabase({ backoffBaseMs: 1_000, backoffMaxMs: 10_000 });
    try {
      const { job } = await db2.queue.enqueue({ kind: 'fail', maxAttempts: 8 });
      const delays: number[] = [];
      for (let i = 0; i < 7; i++) {
        await db2.pool.query('UPDATE herald.jobs SET available_at = now() WHERE id = $1', [job.id]);
        const [c] = await db2.queue.claim({ worker: W, limit: 1 });
        await db2.queue.fail(W, [{ ...c, error: 'x' }]);
        delays.push(await backoffOf(db2.queue, job.id));
      }
      // base * 2^(n-1), less up to 20% jitter, never above the cap (10 s).
      for (const [i, d] of delays.entries()) {
        const nominal = Math.min(10_000, 1_000 * 2 ** i);
        expect(d).toBeGreaterThanOrEqual(nominal * 0.8);
        expect(d).toBeLessThanOrEqual(nominal);
      }
      for (let i = 1; i < 4; i++) expect(delays[i]).toBeGreaterThan(delays[i - 1]);
    } finally {
      await db2.drop();
    }
  });

  it('releases jobs on shutdown without using an attempt', async () => {
    const { job } = await q.enqueue({ kind: 'sleep' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    expect(await q.release(W, [c])).toEqual([]);
    expect((await q.get(job.id))!).toMatchObject({ status: 'queued', attempt: 0, lockedBy: null });
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'released']);
  });
});

describe('cancel and retry', () => {
  it('cancels a queued job at once', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const c = await q.cancel(job.id);
    expect(c).toMatchObject({ status: 'cancelled', cancelRequested: true });
    expect(await q.claim({ worker: W, limit: 1 })).toEqual([]);
    expect(await types(job.id)).toEqual(['enqueued', 'cancelled']);
  });

  it('asks a running job to stop; its failure then ends it cancelled', async () => {
    const { job } = await q.enqueue({ kind: 'sleep' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    expect(await q.cancel(job.id)).toMatchObject({ status: 'running', cancelRequested: true });
    expect((await q.heartbeat(W, [c])).cancelRequested.has(c.id)).toBe(true);
    await q.fail(W, [{ ...c, error: new Error('aborted') }]);
    expect((await q.get(job.id))!.status).toBe('cancelled');
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'cancel_requested', 'cancelled']);
  });

  it('refuses to cancel a finished job and 404s an unknown one', async () => {
    const { job } = await q.enqueue({ kind: 'echo' });
    const [c] = await q.claim({ worker: W, limit: 1 });
    await q.complete(W, [{ ...c, result: 1 }]);
    await expect(q.cancel(job.id)).rejects.toBeInstanceOf(ConflictError);
    await expect(q.cancel('999999')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('retries a failed job with one more attempt, and refuses others', async () => {
    const { job } = await q.enqueue({ kind: 'fail', maxAttempts: 1 });
    await expect(q.retry(job.id)).rejects.toBeInstanceOf(ConflictError);
    const [c] = await q.claim({ worker: W, limit: 1 });
    await q.fail(W, [{ ...c, error: 'x' }]);
    const r = await q.retry(job.id);
    expect(r).toMatchObject({ status: 'queued', maxAttempts: 2, attempt: 1, finishedAt: null });
    const [c2] = await q.claim({ worker: W, limit: 1 });
    expect(c2.attempt).toBe(2);
    await q.complete(W, [{ ...c2, result: null }]);
    expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'failed', 'retried', 'claimed', 'succeeded']);
    await expect(q.retry('424242')).rejects.toBeInstanceOf(NotFoundError);
  });
});

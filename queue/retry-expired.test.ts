// Retrying a job that expired (its expireAt passed while it was queued) is an explicit "run it
// now": the past expireAt is cleared, so the job runs instead of expiring again at once. An
// expireAt still ahead is kept.
import { expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';

const db = useTestDatabase({}, { truncate: ['herald.jobs', 'herald.job_events'] });
const q = db.queue;

const W = 'host:1:aaaa';
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

/** Jobs that expired: queued past their expireAt, then cancelled by the expiry pass. */
async function expired(n: number, queue = 'exp'): Promise<string[]> {
  const made = await q.enqueueMany(Array.from({ length: n }, () => ({ kind: 'k', queue, expireAt: inAnHour() })));
  const ids = made.map((m) => m.job.id);
  await db.pool.query(`UPDATE herald.jobs SET expire_at = now() - interval '1 second' WHERE id = ANY($1::bigint[])`, [ids]);
  expect(await q.expire()).toBe(n);
  for (const id of ids) expect((await q.get(id))!.status).toBe('cancelled');
  return ids;
}

it('a single retry of an expired job runs it: its past expireAt is cleared', async () => {
  const [id] = await expired(1);
  const retried = await q.retry(id);
  expect(retried).toMatchObject({ status: 'queued', expireAt: null });
  expect(await q.expire()).toBe(0);
  expect((await q.claim({ worker: W, limit: 10 })).map((j) => j.id)).toEqual([id]);
});

it('a bulk retry of expired jobs runs them too', async () => {
  const ids = await expired(3);
  expect(await q.bulk('retry', { queue: 'exp', status: 'cancelled' })).toMatchObject({ affected: 3 });
  expect(await q.expire()).toBe(0);
  expect((await q.claim({ worker: W, limit: 10 })).map((j) => j.id).sort()).toEqual([...ids].sort());
});

it('an expireAt still ahead is kept by a retry', async () => {
  const at = inAnHour();
  const { job } = await q.enqueue({ kind: 'k', expireAt: at });
  await q.cancel(job.id);
  expect((await q.retry(job.id)).expireAt).toBe(at);
});

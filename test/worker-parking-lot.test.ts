// A dead-letter queue is a parking lot: a worker without --queues (npm start's, every default
// one) leaves dead-letter queues alone, limited or not, and only a worker that names one works it.
// Its copies may be charges that must not run again by accident.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { HeldQueues } from '../worker/held-queues.ts';
import type { TaskContext } from '../worker/task.ts';
import { Worker } from '../worker/worker.ts';
import { useTestDatabase } from './support/db.ts';
import { waitFor } from './support/wait.ts';

const db = useTestDatabase({}, { truncate: ['herald.jobs', 'herald.job_events', 'herald.queues'] });
const q = db.queue;

/** A job of `queue` that fails for good at once, leaving its copy in the queue's dead-letter queue. */
async function deadLetter(queue: string): Promise<string> {
  const { job } = await q.enqueue({ kind: 'charge', queue, payload: { amount: 10 }, maxAttempts: 1 });
  const [claimed] = await q.claim({ worker: 'setup:1:x', queues: [queue], limit: 1 });
  expect(claimed.id).toBe(job.id);
  await q.fail('setup:1:x', [{ id: job.id, attempt: 1, error: 'card declined' }]);
  const { rows } = await db.pool.query<{ id: string }>('SELECT id::text FROM herald.jobs WHERE dead_letter_of = $1', [job.id]);
  return rows[0].id;
}

const ended = (id: string) =>
  waitFor(async () => {
    const job = await q.get(id);
    return job && ['succeeded', 'failed', 'cancelled'].includes(job.status) ? job : null;
  }, { what: `job ${id} to end` });

describe('a worker for every queue', () => {
  // Before, a claim with no queue list took every queue: the copies in pay-dead ran at once on
  // the first worker started without --queues. Mutation caught: the claim's gate without
  // `|| parked` (queue/sql/claim.ts).
  it('leaves a dead-letter queue alone; a worker that names it runs its copies', async () => {
    await q.patchQueue('pay', { deadLetter: 'pay-dead' });
    const copy = await deadLetter('pay');
    // Enqueued after the copy, same priority: a claim that could take the copy would take it first.
    const { job: later } = await q.enqueue({ kind: 'charge', queue: 'other' });
    const charges: string[] = [];
    const tasks = { charge: async (_payload: unknown, ctx: TaskContext) => void charges.push(ctx.job.id) };
    const everything = new Worker({ databaseUrl: db.url, concurrency: 1, pollMs: 60_000, tasks });
    await everything.start();
    try {
      expect((await ended(later.id)).status).toBe('succeeded');
      expect(await q.get(copy)).toMatchObject({ status: 'queued', attempt: 0 });
      // The API's claim without queues leaves it too.
      expect(await q.claim({ worker: 'api:1:x', limit: 10 })).toEqual([]);
    } finally {
      await everything.stop();
    }
    expect(charges).toEqual([later.id]);
    const named = new Worker({ databaseUrl: db.url, concurrency: 1, pollMs: 60_000, queues: ['pay-dead'], tasks });
    await named.start();
    try {
      expect((await ended(copy)).status).toBe('succeeded');
    } finally {
      await named.stop();
    }
    expect(charges).toEqual([later.id, copy]);
  });

  // A limited dead-letter queue is claimed on its own (claim-limited.ts), from the worker's list
  // of limited queues. Mutation caught: HeldQueues.claimable() without `: !s.parked`.
  it('does not list a limited dead-letter queue among the limited queues it claims one by one', async () => {
    await q.patchQueue('mail', { deadLetter: 'mail-dead' });
    await q.patchQueue('mail-dead', { concurrency: 2 });
    await q.patchQueue('mail-slow', { concurrency: 2 });
    const logger = pino({ level: 'silent' });
    const all = new HeldQueues(q, logger);
    await all.refresh();
    expect(all.claimable()).toEqual(['mail-slow']);
    const named = new HeldQueues(q, logger, new Set(['mail-dead', 'mail-slow']));
    await named.refresh();
    expect(named.claimable()).toEqual(['mail-dead', 'mail-slow']);
    // No longer named as a dead-letter queue: an ordinary queue again.
    await q.patchQueue('mail', { deadLetter: null });
    await all.refresh();
    expect(all.claimable()).toEqual(['mail-dead', 'mail-slow']);
  });
});

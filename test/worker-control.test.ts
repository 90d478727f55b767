// Worker processes and the job fields that need one: the registry (listed while alive, idle
// too; gone within seconds of a SIGKILL, at once on a clean stop), timeoutMs against a handler
// that ignores its signal, and expireAt never starting a job late.
import { expect, it } from 'vitest';
import { HELD_TASKS_DIR, workerTestContext } from './fixtures/worker-process.ts';
import { waitFor } from './support/wait.ts';

const t = workerTestContext();
const ENV = { HERALD_POLL_MS: '60000' };

const release = (jobId: string) => t.db.pool.query('INSERT INTO test_release VALUES ($1) ON CONFLICT DO NOTHING', [jobId]);
const status = async (id: string) => (await t.db.queue.get(id))!.status;
const types = async (id: string) => (await t.db.queue.events(id)).map((e) => e.type);

it('registers every worker, idle ones too; a SIGKILLed one leaves the list within seconds, a stopped one at once', async () => {
  const a = await t.spawn({ env: ENV, args: ['--concurrency', '3', '--queues', 'reg1,reg2', '--capabilities', 'gpu'] });
  const b = await t.spawn({ env: ENV });
  const listed = await t.db.queue.workers();
  expect(listed.map((w) => w.worker).sort()).toEqual([a.id, b.id].sort());
  expect(listed.find((w) => w.worker === a.id)).toMatchObject({
    pid: a.pid, queues: ['reg1', 'reg2'], capabilities: ['gpu'], concurrency: 3, running: 0, jobs: [],
    kinds: expect.arrayContaining(['sleep', 'echo']), startedAt: expect.any(String), lastSeenAt: expect.any(String),
  });
  expect(listed.find((w) => w.worker === b.id)).toMatchObject({ queues: null, concurrency: 10 });
  // A job no live worker takes says so.
  const { job } = await t.db.queue.enqueue({ kind: 'echo', queue: 'reg1', requires: ['tpu'] });
  expect(job.waitingFor).toBe('no_worker');

  a.child.kill('SIGKILL');
  await a.exited;
  await waitFor(async () => !(await t.db.queue.workers()).some((w) => w.worker === a.id), { what: 'the killed worker to leave the list', timeoutMs: 10_000 });
  b.child.kill('SIGTERM');
  await b.exited;
  expect(await t.db.queue.workers()).toEqual([]);
  const { rows } = await t.db.pool.query('SELECT id FROM herald.workers');
  expect(rows.map((r) => r.id)).not.toContain(b.id);
});

it('timeoutMs fails the attempt at the timeout although the handler ignores its signal, and keeps its slot until it returns', async () => {
  const w = await t.spawn({ env: ENV, args: ['--concurrency', '1', '--queues', 'to', '--tasks', HELD_TASKS_DIR] });
  const { job } = await t.db.queue.enqueue({ kind: 'hold', queue: 'to', timeoutMs: 300, maxAttempts: 1 });
  await waitFor(async () => (await status(job.id)) === 'failed', { what: 'the attempt to fail at its timeout' });
  const events = await t.db.queue.events(job.id);
  expect(events.map((e) => e.type)).toEqual(['enqueued', 'claimed', 'failed']);
  expect(events[2].data).toMatchObject({ error: `job ${job.id} timed out after 300 ms (timeoutMs)` });
  expect((await t.db.queue.get(job.id))!.lastError).toMatchObject({ name: 'TimeoutError' });
  // The handler records the signal it saw; that write may land after the failure's.
  const signals = await waitFor(async () => {
    const { rows } = await t.db.pool.query('SELECT name, message FROM test_signals WHERE job = $1', [job.id]);
    return rows.length > 0 ? rows : null;
  }, { what: 'the handler to record its signal' });
  expect(signals).toEqual([{ name: 'TimeoutError', message: `job ${job.id} timed out after 300 ms (timeoutMs)` }]);

  // The handler still runs (it was never released), so the worker's only slot stays taken: the
  // wake-up for the next job finds no free slot, and the job stays queued.
  await w.waitForLog((l) => l.msg === 'job timed out: failure recorded, handler signalled');
  const { job: next } = await t.db.queue.enqueue({ kind: 'echo', queue: 'to' });
  await w.waitForLog((l) => l.msg === 'claim deferred: no free slot' && l.reason === 'notify to');
  expect(await status(next.id)).toBe('queued');
  await release(job.id);
  await waitFor(async () => (await status(next.id)) === 'succeeded', { what: 'the next job to run once the slot is free' });
  // What the late handler returned changed nothing.
  expect(await status(job.id)).toBe('failed');
  expect(await types(job.id)).toEqual(['enqueued', 'claimed', 'failed']);
});

it('expireAt: a job still queued at that time never starts, even when a slot frees later', async () => {
  await t.spawn({ env: ENV, args: ['--concurrency', '1', '--queues', 'exp', '--tasks', HELD_TASKS_DIR] });
  const { job: blocker } = await t.db.queue.enqueue({ kind: 'hold', queue: 'exp' });
  await waitFor(async () => (await status(blocker.id)) === 'running', { what: 'the blocker to take the only slot' });
  const { rows } = await t.db.pool.query(`SELECT now() + interval '300 milliseconds' AS at`);
  const { job } = await t.db.queue.enqueue({ kind: 'echo', queue: 'exp', expireAt: rows[0].at });
  // The database's clock passes expireAt while the job waits; only then does the slot free.
  await waitFor(async () => (await t.db.pool.query('SELECT now() > $1 AS past', [rows[0].at])).rows[0].past, { what: 'expireAt to pass' });
  await release(blocker.id);
  await waitFor(async () => (await status(job.id)) === 'cancelled', { what: 'the job to expire' });
  expect(await types(job.id)).toEqual(['enqueued', 'expired']);
  expect((await t.db.queue.get(job.id))!.attempt).toBe(0);
});

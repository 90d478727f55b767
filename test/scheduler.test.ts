// The scheduler across worker processes: each due tick makes exactly one job while workers race
// for it and are killed and replaced, and after a downtime only the latest missed tick runs, once.
// Ticks are not waited for: the test makes a schedule due by moving its next_run_at into the past,
// and the change wakes every worker (herald_control 'schedules'). The cron ticks once a year, so
// no tick of its own comes during the test, and the tick a turn makes is known exactly: the latest
// 1 January, 00:00 UTC, at the turn's time. The workers poll only every minute and take no queue,
// so the jobs stay queued for the test to read.
import { expect, it } from 'vitest';
import { workerTestContext, type WorkerProcess } from './fixtures/worker-process.ts';
import { waitFor } from './support/wait.ts';

const t = workerTestContext();
const ENV = { HERALD_POLL_MS: '60000', HERALD_QUEUES: 'nothing-here' };
const YEARLY = '0 0 1 1 *';

/** The latest 1 January 00:00 UTC at or before `at`, and the next one after it. */
const newYear = (at: Date, offset = 0) => new Date(Date.UTC(at.getUTCFullYear() + offset, 0, 1));

/** Makes a schedule due now, as if its tick had come. */
async function makeDue(name: string, interval = '1 second') {
  await t.db.pool.query(`UPDATE herald.schedules SET next_run_at = now() - $2::interval WHERE name = $1`, [name, interval]);
}

/** The jobs a schedule made. */
async function jobsOf(name: string) {
  const { rows } = await t.db.pool.query<{ id: string; key: string; created_at: Date }>(
    `SELECT id, idempotency_key AS key, created_at FROM herald.jobs WHERE idempotency_key LIKE $1 ORDER BY id`,
    [`schedule:${name}:%`],
  );
  return rows;
}

/**
 * The schedule made exactly one job, for the latest tick at its turn, and moved on to the next
 * tick. Catches `scheduleKey(s.name, turn.now)` for `scheduleKey(s.name, tick)` (the key), and
 * `s.next_run_at` for `next` in markScheduleRun (a schedule left due).
 */
async function expectOneJobForLatestTick(name: string) {
  const jobs = await jobsOf(name);
  expect(jobs, name).toHaveLength(1);
  const tick = newYear(jobs[0].created_at);
  expect(jobs[0].key).toBe(`schedule:${name}:${tick.toISOString()}`);
  const schedule = (await t.db.queue.schedules()).find((s) => s.name === name)!;
  expect(schedule).toMatchObject({ lastRunAt: tick.toISOString(), lastJobId: jobs[0].id, nextRunAt: newYear(jobs[0].created_at, 1).toISOString() });
}

it('makes exactly one job per due tick while workers race for it, are killed and replaced', async () => {
  const names = ['round-0', 'round-1', 'round-2'];
  for (const name of names) await t.db.queue.putSchedule(name, { cron: YEARLY, job: { kind: 'echo', queue: 'sched', payload: { hi: 1 } } });
  let workers: WorkerProcess[] = await Promise.all([1, 2].map(() => t.spawn({ env: ENV })));
  for (const [round, name] of names.entries()) {
    if (round > 0) {
      // SIGKILL the oldest worker; the first time, start another in its place.
      const [victim, ...rest] = workers;
      victim.child.kill('SIGKILL');
      await victim.exited;
      workers = round === 1 ? [...rest, await t.spawn({ env: ENV })] : rest;
    }
    await makeDue(name);
    await waitFor(async () => (await t.db.queue.schedules()).find((s) => s.name === name)!.lastJobId !== null, { what: `the job of ${name}` });
  }
  for (const name of names) await expectOneJobForLatestTick(name);
  const { rows } = await t.db.pool.query(`SELECT DISTINCT kind, queue, payload FROM herald.jobs WHERE queue = 'sched'`);
  expect(rows).toEqual([{ kind: 'echo', queue: 'sched', payload: { hi: 1 } }]);
  for (const w of workers) {
    w.child.kill('SIGTERM');
    await w.exited;
  }
});

it('after a downtime, only the latest missed tick runs, once', async () => {
  // No worker runs now. The schedule's tick was three years ago: it missed that one and two more.
  await t.db.queue.putSchedule('catchup', { cron: YEARLY, job: { kind: 'echo', queue: 'sched2' } });
  await makeDue('catchup', '3 years 1 day');
  const missedSince = (await t.db.queue.schedules()).find((s) => s.name === 'catchup')!.nextRunAt!;
  await t.spawn({ env: ENV });
  await waitFor(async () => (await jobsOf('catchup')).length > 0, { what: 'the catch-up job' });
  // One job, for this year's tick, not one per missed tick nor the oldest one
  // (caught: `s.next_run_at!` for the latest tick in fireDueSchedules).
  await expectOneJobForLatestTick('catchup');
  expect(Date.parse(missedSince)).toBeLessThan(newYear(new Date(), -2).getTime());
});

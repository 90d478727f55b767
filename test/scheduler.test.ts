// The scheduler across worker processes: every tick makes exactly one job while workers are
// killed and replaced, and after a downtime only the latest missed tick runs, once. A schedule
// every 2 s; the workers poll only every minute, so each turn is driven by the due time itself.
import { expect, it } from 'vitest';
import { workerTestContext, type WorkerProcess } from './fixtures/worker-process.ts';
import { waitFor } from './support/wait.ts';

const t = workerTestContext();
const ENV = { HERALD_POLL_MS: '60000', HERALD_QUEUES: 'nothing-here' };
const PERIOD_MS = 2_000;

/** The ticks the schedule made jobs for, from their idempotency keys, in order. */
async function ticks(name: string): Promise<number[]> {
  const { rows } = await t.db.pool.query(
    `SELECT idempotency_key AS key FROM herald.jobs WHERE idempotency_key LIKE $1 ORDER BY idempotency_key`,
    [`schedule:${name}:%`],
  );
  return rows.map((r) => Date.parse(r.key.slice(`schedule:${name}:`.length))).sort((a, b) => a - b);
}

const dbNow = async () => (await t.db.pool.query('SELECT now() AS now')).rows[0].now.getTime() as number;

it('makes exactly one job per tick, however many workers run and while some are killed', async () => {
  let workers: WorkerProcess[] = await Promise.all([1, 2, 3].map(() => t.spawn({ env: ENV })));
  await t.db.queue.putSchedule('every2s', { cron: '*/2 * * * * *', job: { kind: 'echo', queue: 'sched', payload: { hi: 1 } } });
  await waitFor(async () => (await ticks('every2s')).length >= 3, { what: 'three ticks', timeoutMs: 30_000 });
  // Twice: SIGKILL the oldest worker and start another.
  for (let round = 0; round < 2; round++) {
    const [victim, ...rest] = workers;
    victim.child.kill('SIGKILL');
    await victim.exited;
    workers = [...rest, await t.spawn({ env: ENV })];
    const seen = (await ticks('every2s')).length;
    await waitFor(async () => (await ticks('every2s')).length >= seen + 2, { what: 'two more ticks', timeoutMs: 30_000 });
  }
  const made = await ticks('every2s');
  expect(made.length).toBeGreaterThanOrEqual(7);
  // One job per tick (the key is unique), on the ticks. A tick is skipped only when every worker
  // was late past the next one (a starved machine): the scheduler then runs the latest, by
  // design. Once may happen on a loaded machine; more would mean ticks are being lost.
  const gaps = made.slice(1).map((at, i) => at - made[i]);
  for (const gap of gaps) expect(gap > 0 && gap % PERIOD_MS === 0, `gaps ${gaps.join(', ')}`).toBe(true);
  expect(gaps.filter((gap) => gap > PERIOD_MS).length, `gaps ${gaps.join(', ')}`).toBeLessThanOrEqual(1);
  const { rows } = await t.db.pool.query(`SELECT DISTINCT kind, queue, payload FROM herald.jobs WHERE queue = 'sched'`);
  expect(rows).toEqual([{ kind: 'echo', queue: 'sched', payload: { hi: 1 } }]);
  const [schedule] = await t.db.queue.schedules();
  expect(new Date(schedule.lastRunAt!).getTime()).toBe(made.at(-1));
  for (const w of workers) {
    w.child.kill('SIGTERM');
    await w.exited;
  }
});

it('after a downtime, only the latest missed tick runs, once', async () => {
  await t.db.queue.putSchedule('catchup', { cron: '*/2 * * * * *', job: { kind: 'echo', queue: 'sched2' } });
  const first = await t.spawn({ env: ENV });
  await waitFor(async () => (await ticks('catchup')).length >= 1, { what: 'a first tick', timeoutMs: 30_000 });
  first.child.kill('SIGKILL');
  await first.exited;
  // A turn whose COMMIT the killed worker had already sent still commits: read the last tick
  // only once its sessions are gone, so it cannot land after the read.
  const sessions = async () =>
    (await t.db.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE $1`, [`herald:worker%:${first.child.pid}`])).rows[0].n as number;
  await waitFor(async () => (await sessions()) === 0, { what: "the killed worker's sessions to end", timeoutMs: 30_000 });
  const lastBefore = (await ticks('catchup')).at(-1)!;
  // No scheduler runs while at least three ticks pass.
  await waitFor(async () => (await dbNow()) > lastBefore + 3 * PERIOD_MS + 200, { what: 'three ticks to be missed', timeoutMs: 30_000 });
  await t.spawn({ env: ENV });
  await waitFor(async () => (await ticks('catchup')).some((tk) => tk > lastBefore), { what: 'the catch-up job', timeoutMs: 30_000 });
  const after = (await ticks('catchup')).filter((tk) => tk > lastBefore);
  // The ticks in between made nothing; the catch-up is the latest one that had come.
  expect(after[0]).toBeGreaterThanOrEqual(lastBefore + 3 * PERIOD_MS);
  for (let i = 1; i < after.length; i++) expect(after[i] - after[i - 1]).toBe(PERIOD_MS);
});

// The start check against real PostgreSQL, on a clock the test steps: which starts one answer of
// the database admits (those within START_CHECK_REUSE_MS of the question), which ask again, and
// that a PATCH holding a queue waits out that window before it returns (the two together keep
// "no job of the queue starts after the PATCH returns").
import { performance } from 'node:perf_hooks';
import { expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { HOLD_SETTLE_MS, START_CHECK_REUSE_MS } from '../queue/defaults.ts';
import { StartCheck } from './may-start.ts';

const db = useTestDatabase();

/** A StartCheck on the test database, its clock at `t.now`, counting the questions it asks. */
function check() {
  const t = { now: 0, asked: 0, dbNow: 0 };
  const work = {
    startGate: async () => {
      t.asked++;
      const answer = await db.queue.startGate();
      t.dbNow = answer.now.getTime();
      return answer;
    },
  };
  return { t, startCheck: new StartCheck(work, () => t.now) };
}

const job = (queue: string, expireAtMs: number | null = null) => ({ queue, expireAtMs });

it('one answer admits the starts of the reuse window; the first start past it asks again', async () => {
  // Mutation caught: the window left out (`age < START_CHECK_REUSE_MS` always true).
  const { t, startCheck } = check();
  expect(await startCheck.mayStart([job('reuse')])).toEqual([true]);
  t.now = START_CHECK_REUSE_MS - 1;
  expect(await startCheck.mayStart([job('reuse'), job('reuse-2')])).toEqual([true, true]);
  expect(t.asked).toBe(1);
  t.now = START_CHECK_REUSE_MS;
  expect(await startCheck.mayStart([job('reuse')])).toEqual([true]);
  expect(t.asked).toBe(2);
});

it('a start the reused answer would refuse asks afresh: a resumed queue is not refused for a window', async () => {
  // Mutation caught: a reused refusal returned as it is (`if (reused.every(Boolean))` left out).
  await db.queue.patchQueue('resumed', { paused: true });
  const { t, startCheck } = check();
  expect(await startCheck.mayStart([job('resumed')])).toEqual([false]);
  await db.queue.patchQueue('resumed', { paused: false });
  t.now = 1;
  expect(await startCheck.mayStart([job('resumed')])).toEqual([true]);
  expect(t.asked).toBe(2);
});

it("a reused answer counts the time since its question on the database's clock: a job it may have outlived asks afresh", async () => {
  // Mutation caught: the reused answer deciding on the clock as it was read (`+ age` left out).
  const { t, startCheck } = check();
  expect(await startCheck.mayStart([job('expiring')])).toEqual([true]);
  t.now = 40;
  // 30 ms past the database's reading, 40 ms of this clock after the question: asked afresh (what
  // the database says then depends on real time, so only the question is checked).
  await startCheck.mayStart([job('expiring', t.dbNow + 30)]);
  expect(t.asked).toBe(2);
});

it('forgets its answer when a settings change is announced, and keeps none asked before it', async () => {
  const { t, startCheck } = check();
  await startCheck.mayStart([job('forget')]);
  startCheck.forget();
  await startCheck.mayStart([job('forget')]);
  expect(t.asked).toBe(2);
  // Asked before a forget, answered after it: not kept.
  const inFlight = startCheck.mayStart([job('forget')]);
  startCheck.forget();
  await inFlight;
  await startCheck.mayStart([job('forget')]);
  expect(t.asked).toBe(4);
});

it('a PATCH that pauses or limits a queue returns only after the reuse window has passed twice', async () => {
  // Mutation caught: patchQueue not waiting (`if (holds(patch)) await setTimeout(HOLD_SETTLE_MS);` removed).
  expect(HOLD_SETTLE_MS).toBeGreaterThan(START_CHECK_REUSE_MS);
  for (const patch of [{ paused: true }, { concurrency: 2 }, { groupConcurrency: 1 }, { rateLimit: { count: 5, periodMs: 1000 } }]) {
    const before = performance.now();
    await db.queue.patchQueue('settle', patch);
    // A timer may fire up to a millisecond early by the event loop's cached clock.
    expect(performance.now() - before, JSON.stringify(patch)).toBeGreaterThanOrEqual(HOLD_SETTLE_MS - 1);
  }
});

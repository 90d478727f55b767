// The wake-up rules, with a fake claim: coalescing, "full means more", retries, scheduled times.
// A chain of claims ends when one comes back short and the claimer asks for the next scheduled
// time (nextRunAt): the tests wait for that, then count the claims. Scheduled times run on
// fake timers.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { Claimer } from './claimer.ts';
import { waitFor } from '../test/support/wait.ts';

const logger = pino({ level: 'silent' });
afterEach(() => void vi.useRealTimers());

function harness(opts: { free?: number; answers?: (limit: number, call: number) => number | Error } = {}) {
  const calls: number[] = [];
  let inFlight = 0;
  let most = 0;
  const release: (() => void)[] = [];
  let held = false;
  const nextRuns: number[] = [];
  let free = opts.free ?? 10;
  const claimer = new Claimer({
    pollMs: 60_000,
    maxBatch: 500,
    logger,
    freeSlots: () => free,
    claim: async (limit) => {
      calls.push(limit);
      most = Math.max(most, ++inFlight);
      if (held) await new Promise<void>((r) => release.push(r));
      inFlight--;
      const answer = opts.answers ? opts.answers(limit, calls.length) : 0;
      if (answer instanceof Error) throw answer;
      return answer;
    },
    nextRunAt: async () => {
      nextRuns.push(Date.now());
      return null;
    },
  });
  return {
    claimer,
    calls,
    nextRuns,
    get most() {
      return most;
    },
    /** Resolves once `n` chains of claims have ended. */
    ended(n = 1) {
      return waitFor(() => nextRuns.length >= n, { what: `${n} chain(s) of claims to end` });
    },
    hold() {
      held = true;
    },
    releaseAll() {
      held = false;
      for (const r of release.splice(0)) r();
    },
    setFree(n: number) {
      free = n;
    },
  };
}

describe('Claimer', () => {
  it('claims at once on a wake-up, sized to the free slots', async () => {
    const h = harness({ free: 7 });
    h.claimer.wake('notify');
    expect(h.calls).toEqual([7]);
    await h.ended();
    expect(h.calls).toEqual([7]);
    await h.claimer.stop();
  });

  it('coalesces wake-ups during a claim into exactly one more claim', async () => {
    const h = harness();
    h.hold();
    h.claimer.wake('notify');
    expect(h.calls).toHaveLength(1);
    for (let i = 0; i < 5; i++) h.claimer.wake('notify');
    h.releaseAll();
    await h.ended();
    expect(h.calls).toHaveLength(2);
    expect(h.most).toBe(1);
    await h.claimer.stop();
  });

  it('claims again while claims come back full, then asks for the next scheduled time', async () => {
    const h = harness({ free: 4, answers: (limit, call) => (call < 3 ? limit : 1) });
    h.claimer.wake('notify');
    await h.ended();
    expect(h.calls).toEqual([4, 4, 4]);
    expect(h.nextRuns).toHaveLength(1);
    await h.claimer.stop();
  });

  it('waits for a free slot, and claims when one frees', async () => {
    const h = harness({ free: 0 });
    h.claimer.wake('notify');
    expect(h.calls).toEqual([]);
    h.setFree(2);
    h.claimer.slotFreed();
    await h.ended();
    expect(h.calls).toEqual([2]);
    await h.claimer.stop();
  });

  it('retries a claim that failed', async () => {
    const h = harness({ answers: (_l, call) => (call === 1 ? new Error('db down') : 0) });
    h.claimer.wake('notify');
    await h.ended();
    expect(h.calls.length).toBe(2);
    await h.claimer.stop();
  });

  it('wakes at a scheduled time', async () => {
    vi.useFakeTimers();
    const h = harness();
    h.claimer.dueAtTime(Date.now() + 30);
    h.claimer.dueAtTime(Date.now() + 10_000); // a later time does not push the earlier one back
    await vi.advanceTimersByTimeAsync(29);
    expect(h.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.calls).toEqual([10]);
    await h.claimer.stop();
  });
});

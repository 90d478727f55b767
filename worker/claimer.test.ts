// The wake-up rules, with a fake claim: coalescing, "full means more", retries, scheduled times.
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Claimer } from './claimer.ts';

const logger = pino({ level: 'silent' });
const settle = (ms = 20) => new Promise((r) => setTimeout(r, ms));

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
    await settle();
    expect(h.calls).toEqual([7]);
    await h.claimer.stop();
  });

  it('coalesces wake-ups during a claim into exactly one more claim', async () => {
    const h = harness();
    h.hold();
    h.claimer.wake('notify');
    await settle(5);
    for (let i = 0; i < 5; i++) h.claimer.wake('notify');
    h.releaseAll();
    await settle();
    expect(h.calls).toHaveLength(2);
    expect(h.most).toBe(1);
    await h.claimer.stop();
  });

  it('claims again while claims come back full, then asks for the next scheduled time', async () => {
    const h = harness({ free: 4, answers: (limit, call) => (call < 3 ? limit : 1) });
    h.claimer.wake('notify');
    await settle(50);
    expect(h.calls).toEqual([4, 4, 4]);
    expect(h.nextRuns).toHaveLength(1);
    await h.claimer.stop();
  });

  it('waits for a free slot, and claims when one frees', async () => {
    const h = harness({ free: 0 });
    h.claimer.wake('notify');
    await settle();
    expect(h.calls).toEqual([]);
    h.setFree(2);
    h.claimer.slotFreed();
    await settle();
    expect(h.calls).toEqual([2]);
    await h.claimer.stop();
  });

  it('retries a claim that failed', async () => {
    const h = harness({ answers: (_l, call) => (call === 1 ? new Error('db down') : 0) });
    h.claimer.wake('notify');
    await settle(300);
    expect(h.calls.length).toBe(2);
    await h.claimer.stop();
  });

  it('wakes at a scheduled time', async () => {
    const h = harness();
    h.claimer.dueAtTime(Date.now() + 30);
    h.claimer.dueAtTime(Date.now() + 10_000); // a later time does not push the earlier one back
    await settle(10);
    expect(h.calls).toEqual([]);
    await settle(60);
    expect(h.calls).toEqual([10]);
    await h.claimer.stop();
  });
});

// The pace that sizes the claim-ahead buffer, and its horizon.
import { describe, expect, it } from 'vitest';
import { Pace, aheadHorizon } from './pace.ts';

describe('Pace', () => {
  it('counts handlers finished per ms over the last window, and what that makes within a horizon', () => {
    let now = 0;
    const pace = new Pace(() => now);
    for (let i = 0; i < 50; i++) pace.tick();
    now = 100;
    expect(pace.within(50)).toBe(25); // 50 in 100 ms
    now = 350; // two idle windows: nothing recent
    expect(pace.within(50)).toBe(0);
  });

  // Catches: resume() not restarting the window (`this.bucketStart = t` or `this.full = false`
  // dropped). A worker that starts against a backlog, or after an idle spell, then measures its
  // first jobs over the quiet time before them and claims a few slots' worth for ~150 ms.
  it('measures work that resumes after a quiet spell from its own start', () => {
    let now = 0;
    const pace = new Pace(() => now);
    now = 90; // the worker started, then connected, registered and claimed
    pace.resume();
    now = 110;
    for (let i = 0; i < 16; i++) pace.tick(); // its first 16 jobs took 20 ms
    expect(pace.within(50)).toBe(40); // 16 in 20 ms, not 16 in 110

    now = 1_000; // idle since, then a burst
    pace.resume();
    now = 1_020;
    for (let i = 0; i < 16; i++) pace.tick();
    expect(pace.within(50)).toBe(40); // not diluted by a window of the idle time either
  });

  // Catches: the floor dropped (`Math.max(MIN_SPAN_MS,` back to `Math.max(1,`), so 16 jobs done in
  // the first millisecond size a claim of 800; and a resume() that restarts the window mid-work.
  it('keeps the rate it has while work goes on, and takes no rate over less than 10 ms', () => {
    let now = 0;
    const pace = new Pace(() => now);
    pace.resume();
    for (let i = 0; i < 16; i++) pace.tick(); // 16 done within the first millisecond
    now = 1;
    expect(pace.within(50)).toBe(80); // counted over 10 ms, not 1
    now = 5;
    pace.resume(); // jobs still running: the window goes on
    expect(pace.within(50)).toBe(80);
    now = 20;
    expect(pace.within(50)).toBe(40);
  });
});

describe('aheadHorizon', () => {
  it('is claimAheadMs while claims are quick, two claims long when they are slow, and bounded', () => {
    expect(aheadHorizon(50)).toBe(50);
    expect(aheadHorizon(50, 10)).toBe(50);
    expect(aheadHorizon(50, 40)).toBe(80);
    expect(aheadHorizon(50, 500)).toBe(200);
    expect(aheadHorizon(0, 40)).toBe(0); // claim-ahead off stays off
  });
});

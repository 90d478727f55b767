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

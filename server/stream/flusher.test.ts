// Write coalescing: the gap follows the number of sessions, quiet sessions write at once,
// busy ones are flushed together by one timer.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Flusher } from './flusher.ts';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

const session = () => ({ flushes: 0, flush() { this.flushes++; } });

describe('Flusher', () => {
  it('spreads a budget of writes over the sessions, up to 100 ms', () => {
    let n = 0;
    const f = new Flusher(20_000, () => n);
    n = 10;
    expect(f.gapMs()).toBe(0.5);
    n = 1000;
    expect(f.gapMs()).toBe(50);
    n = 100_000;
    expect(f.gapMs()).toBe(100);
    expect(new Flusher(0, () => 1000).gapMs()).toBe(0);
  });

  it('writes at once when the last write is a gap old, else once at the shared flush', () => {
    const f = new Flusher(20_000, () => 1000);
    const a = session();
    const b = session();
    const now = Date.now();
    f.request(a, now - 60, now);
    expect(a.flushes).toBe(1);
    for (let i = 0; i < 5; i++) {
      f.request(a, now, now);
      f.request(b, now, now);
    }
    expect([a.flushes, b.flushes]).toEqual([1, 0]);
    vi.advanceTimersByTime(50);
    expect([a.flushes, b.flushes]).toEqual([2, 1]);
  });

  it('forgets a closed session', () => {
    const f = new Flusher(20_000, () => 1000);
    const a = session();
    f.request(a, Date.now(), Date.now());
    f.forget(a);
    vi.advanceTimersByTime(100);
    expect(a.flushes).toBe(0);
  });
});

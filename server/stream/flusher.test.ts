// Write coalescing: each session's share of the write budget follows the number of sessions;
// a session within its share writes at once, a busier one is flushed with the others by one timer.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Flusher } from './flusher.ts';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

const session = () => ({ flushes: 0, credit: { tokens: 2, at: Date.now() }, flush() { this.flushes++; } });

describe('Flusher', () => {
  it('spreads a budget of writes over the sessions, up to 100 ms apart', () => {
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

  it('writes at once while a session keeps within its share', () => {
    const f = new Flusher(20_000, () => 1000);
    const a = session();
    for (let i = 0; i < 10; i++) {
      vi.advanceTimersByTime(50);
      f.request(a);
    }
    expect(a.flushes).toBe(10);
  });

  it('coalesces a busy session to about one write per gap, flushed together', () => {
    const f = new Flusher(20_000, () => 1000);
    const a = session();
    const b = session();
    // 1000 events each over one second: a write per gap (20), not per event.
    for (let ms = 0; ms < 1000; ms++) {
      f.request(a);
      f.request(b);
      vi.advanceTimersByTime(1);
    }
    vi.advanceTimersByTime(100);
    for (const s of [a, b]) {
      expect(s.flushes).toBeGreaterThanOrEqual(19);
      expect(s.flushes).toBeLessThanOrEqual(24);
    }
  });

  it('forgets a closed session', () => {
    const f = new Flusher(20_000, () => 1000);
    const a = session();
    f.request(a);
    f.request(a);
    f.request(a);
    f.forget(a);
    vi.advanceTimersByTime(100);
    expect(a.flushes).toBe(2);
  });
});

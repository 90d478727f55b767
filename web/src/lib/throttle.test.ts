// Unit tests for throttle.ts, with fake timers: no browser, no server.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { throttle } from './throttle';

describe('throttle', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('runs at most once per interval, with a trailing run', async () => {
    let runs = 0;
    const t = throttle(() => runs++, 1000);
    t();
    expect(runs).toBe(1);
    for (let i = 0; i < 50; i++) t();
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(runs).toBe(2);
    await vi.advanceTimersByTimeAsync(5000);
    expect(runs).toBe(2);
  });
});

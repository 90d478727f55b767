// Unit tests for rates and latency (rate-series.ts): no browser, no server.

import { describe, expect, it } from 'vitest';
import { RateSeries } from './rate-series';
import { ev } from './test-events';

describe('RateSeries', () => {
  it('buckets rates and enqueue→start latency per second', () => {
    const base = Date.parse('2026-01-01T00:00:00Z');
    const s = new RateSeries(60);
    const at = (ms: number) => new Date(base + ms).toISOString();
    s.add(ev('1', 'enqueued', 'queued', { at: at(100) }), base);
    s.add(ev('2', 'enqueued', 'queued', { at: at(900) }), base);
    s.add(ev('1', 'claimed', 'running', { at: at(1100), data: { lagMs: 10 } }), base);
    s.add(ev('2', 'claimed', 'running', { at: at(1200), data: { lagMs: 30 } }), base);
    s.add(ev('1', 'succeeded', 'succeeded', { at: at(1500) }), base);
    s.add(ev('2', 'failed', 'failed', { at: at(2500) }), base);
    const d = s.data(base + 3000);
    expect(d.x).toHaveLength(60);
    const i0 = d.x.indexOf(base / 1000);
    expect(d.enqueued[i0]).toBe(2);
    expect(d.lagAvg[i0]).toBeNull();
    expect(d.lagAvg[i0 + 1]).toBe(20);
    expect(d.lagMax[i0 + 1]).toBe(30);
    expect(d.succeeded[i0 + 1]).toBe(1);
    expect(d.failed[i0 + 2]).toBe(1);
    const t = s.totals(60, base + 3000);
    expect(t).toMatchObject({ enqueued: 2, succeeded: 1, failed: 1, lagAvg: 20, lagMax: 30 });
    // a minute later everything has slid out of the window
    expect(s.totals(60, base + 120_000).enqueued).toBe(0);
  });

  it('is filled from stored per-minute history before the page listened, and live events add on top', () => {
    const open = Date.parse('2026-01-01T00:10:30Z');
    const s = new RateSeries(300);
    const minute = (at: string, succeeded: number, waitP50Ms: number | null = null, waitP95Ms: number | null = null) =>
      ({ at, enqueued: succeeded, started: succeeded, succeeded, failed: 0, waitP50Ms, waitP95Ms, depth: 0 });
    // Two queues' history: the minute before the page opened, and the current one (30 s of it).
    s.seed([minute('2026-01-01T00:09:00Z', 120, 8, 40), minute('2026-01-01T00:10:00Z', 30)], open);
    s.seed([minute('2026-01-01T00:09:00Z', 60, 16, 90), minute('2026-01-01T00:00:00Z', 999)], open); // 00:00 is out of the window
    s.add(ev('1', 'succeeded', 'succeeded', { at: '2026-01-01T00:10:31.500Z' }), open + 1500);
    const t = s.totals(60, open + 2000);
    // 00:09:32..00:10:29: 28 s of (180/60) per second, 30 s of 1 per second; plus the live one at :31
    expect(t.succeeded).toBeCloseTo(28 * 3 + 30 + 1, 5);
    expect(t.lagAvg).toBe(12);
    expect(t.lagMax).toBe(90);
    const d = s.data(open + 2000);
    expect(d.succeeded.filter((v) => v > 0).length).toBeGreaterThan(60);
  });

  // Catches the span's first second off by one (`end - seconds` without the `+ 1`: a second too many).
  it('totals exactly the complete seconds data() plots, for any span', () => {
    const base = Date.parse('2026-01-01T00:00:00Z');
    const s = new RateSeries(30);
    const types = ['enqueued', 'claimed', 'succeeded', 'failed'] as const;
    for (let k = 0; k < 400; k++) {
      const type = types[k % 4];
      s.add(ev(String(k), type, 'running', { at: new Date(base + k * 137).toISOString(), data: { lagMs: k % 50 } }), base + k * 137);
    }
    const now = base + 400 * 137 + 500;
    const d = s.data(now);
    for (const span of [1, 7, 30, 60]) {
      const from = Math.max(0, d.x.length - span);
      const sum = (xs: number[]) => xs.slice(from).reduce((a, b) => a + b, 0);
      const t = s.totals(span, now);
      expect(t).toMatchObject({ enqueued: sum(d.enqueued), succeeded: sum(d.succeeded), failed: sum(d.failed) });
      const lagMax = d.lagMax.slice(from).filter((x) => x !== null);
      expect(t.lagMax).toBe(lagMax.length ? Math.max(...lagMax) : null);
    }
  });
});

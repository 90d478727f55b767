// Unit tests for the count bookkeeping (queue-counts.ts): no browser, no server.

import { describe, expect, it } from 'vitest';
import { applyTransition, applyTransitions, bucketOf, LiveIndex, type Transition } from './queue-counts';
import { counts, ev } from './test-events';

describe('status and count bookkeeping', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');

  it('counts a queued job with a future runAt as scheduled', () => {
    expect(bucketOf('queued', '2026-01-01T00:01:00Z', now)).toBe('scheduled');
    expect(bucketOf('queued', '2025-12-31T23:59:00Z', now)).toBe('queued');
    expect(bucketOf('running', '2026-01-01T00:01:00Z', now)).toBe('running');
  });

  it('moves a job through the counts as its events arrive', () => {
    const idx = new LiveIndex();
    const qs = [counts()];
    applyTransition(qs, idx.apply(ev('1', 'enqueued', 'queued'), now));
    expect(qs[0].queued).toBe(1);
    applyTransition(qs, idx.apply(ev('1', 'claimed', 'running', { data: { lagMs: 4 } }), now));
    expect(qs[0]).toMatchObject({ queued: 0, running: 1 });
    applyTransition(qs, idx.apply(ev('1', 'progress', 'running', { data: { percent: 50 } }), now));
    expect(qs[0]).toMatchObject({ queued: 0, running: 1 });
    applyTransition(
      qs,
      idx.apply(ev('1', 'retry_scheduled', 'queued', { data: { error: { message: 'x' }, runAt: '2026-01-01T00:00:30Z' } }), now),
    );
    expect(qs[0]).toMatchObject({ running: 0, scheduled: 1 });
    applyTransition(qs, idx.apply(ev('1', 'claimed', 'running'), now + 60_000));
    // the index remembers it was scheduled, so the right bucket is decremented
    expect(qs[0]).toMatchObject({ scheduled: 0, running: 1 });
    applyTransition(qs, idx.apply(ev('1', 'failed', 'failed'), now));
    expect(qs[0]).toMatchObject({ running: 0, failed: 1 });
    applyTransition(qs, idx.apply(ev('1', 'retried', 'queued'), now));
    expect(qs[0]).toMatchObject({ failed: 0, queued: 1 });
    applyTransition(qs, idx.apply(ev('1', 'cancelled', 'cancelled'), now));
    expect(qs[0]).toMatchObject({ queued: 0, cancelled: 1 });
    // A bulk delete: the job leaves every count and the index forgets it.
    applyTransition(qs, idx.apply(ev('1', 'deleted', 'cancelled'), now));
    expect(qs[0]).toMatchObject({ queued: 0, cancelled: 0 });
    expect(idx.get('1')).toBeUndefined();
  });

  it('infers the previous bucket from the type for jobs it never saw, and skips when it cannot', () => {
    const idx = new LiveIndex();
    const qs = [counts('default', { queued: 5, running: 2, failed: 1 })];
    expect(applyTransition(qs, idx.apply(ev('9', 'claimed', 'running'), now))).toBe(true);
    expect(qs[0]).toMatchObject({ queued: 4, running: 3 });
    // retried from failed or cancelled? unknown: nothing moves, the refetch will fix it
    expect(applyTransition(qs, idx.apply(ev('8', 'retried', 'queued'), now))).toBe(false);
    expect(qs[0]).toMatchObject({ queued: 4, running: 3, failed: 1 });
    // but once seen, the next transition is exact
    applyTransition(qs, idx.apply(ev('8', 'claimed', 'running'), now));
    expect(qs[0]).toMatchObject({ queued: 3, running: 4 });
    // run now: a job the board never saw leaves scheduled for queued
    const later = [counts('default', { scheduled: 2 })];
    expect(applyTransition(later, idx.apply(ev('7', 'promoted', 'queued', { data: { scheduledFor: '2026-01-01T01:00:00Z' } }), now))).toBe(true);
    expect(later[0]).toMatchObject({ scheduled: 1, queued: 1 });
  });

  it('uses jobs seeded from HTTP, but never over newer stream knowledge', () => {
    const idx = new LiveIndex();
    idx.seed({ id: '5', queue: 'default', kind: 'k', status: 'cancelled', attempt: 1, runAt: null, lockedBy: null }, now);
    const qs = [counts('default', { cancelled: 1 })];
    applyTransition(qs, idx.apply(ev('5', 'retried', 'queued'), now));
    expect(qs[0]).toMatchObject({ cancelled: 0, queued: 1 });
    idx.seed({ id: '5', queue: 'default', kind: 'k', status: 'cancelled', attempt: 1, runAt: null, lockedBy: null }, now);
    expect(idx.get('5')?.status).toBe('queued');
  });

  it('creates a queue row in order for a queue it had not seen, and never goes negative', () => {
    const qs = [counts('a'), counts('c')];
    applyTransition(qs, { queue: 'b', prev: 'queued', next: 'running' });
    expect(qs.map((q) => q.queue)).toEqual(['a', 'b', 'c']);
    expect(qs[1]).toMatchObject({ queued: 0, running: 1 });
  });

  it('bounds the index', () => {
    const idx = new LiveIndex(4);
    for (const id of ['1', '2', '3', '4', '5', '6']) idx.apply(ev(id, 'enqueued', 'queued'), now);
    expect(idx.size).toBeLessThanOrEqual(4);
    expect(idx.get('1')).toBeUndefined();
    expect(idx.get('6')?.status).toBe('queued');
    expect(idx.get('5')?.status).toBe('queued');
  });

  // Catches a write-back that skips new queues (no `queues.push(row)`/splice) and one that writes
  // every count of a touched row, or every move, instead of each changed count once.
  it('moves a frame of transitions as one by one would, writing each changed count once', () => {
    const buckets = ['queued', 'scheduled', 'running', 'succeeded', 'failed', null, undefined] as const;
    let seed = 7;
    const pick = <T>(xs: readonly T[]) => xs[(seed = (seed * 48271) % 2147483647) % xs.length];
    const moves: Transition[] = Array.from({ length: 500 }, () => ({
      queue: pick(['a', 'b', 'c', 'd']), prev: pick(buckets), next: pick(buckets.slice(0, 6)) as Transition['next'],
    }));
    const start = () => [counts('b', { queued: 3, failed: 1 }), counts('d', { running: 2 })];
    const one = start();
    for (const t of moves) applyTransition(one, t);
    const all = start();
    let writes = 0;
    const watched = all.map((row) => new Proxy(row, { set: (r, k, v) => (writes++, Reflect.set(r, k, v)) }));
    applyTransitions(watched, moves);
    expect(watched).toEqual(one);
    expect(watched.map((q) => q.queue)).toEqual(['a', 'b', 'c', 'd']);
    const changed = start().reduce((n, row) => n + Object.keys(row).filter((k) => row[k as 'queued'] !== one.find((q) => q.queue === row.queue)![k as 'queued']).length, 0);
    expect(writes).toBe(changed);
  });
});

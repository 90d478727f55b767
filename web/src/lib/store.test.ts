// Unit tests for the board store's pure logic (store-core.ts, throttle.ts, route.ts).
// No browser, no server: fake EventSources and fake timers.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseHash, href } from './route';
import {
  applyTransition,
  backoffDelay,
  bucketOf,
  CLOSED,
  compareIds,
  CONNECTING,
  EventBatcher,
  LiveIndex,
  mergeIntoPage,
  normalizeEvent,
  RateSeries,
  RecentIds,
  StreamClient,
  streamUrl,
  type SourceLike,
} from './store-core';
import { throttle } from './throttle';
import type { EventType, Job, JobEvent, JobStatus, QueueCounts } from './types';

let nextEventId = 1;
function ev(jobId: string, type: EventType, status: JobStatus, extra: Partial<JobEvent> = {}): JobEvent {
  return {
    eventId: String(nextEventId++),
    jobId,
    queue: 'default',
    kind: 'sleep',
    type,
    status,
    attempt: type === 'enqueued' ? 0 : 1,
    worker: status === 'running' ? 'w1' : null,
    at: new Date(1_700_000_000_000).toISOString(),
    data: null,
    ...extra,
  };
}

function counts(queue = 'default', c: Partial<QueueCounts> = {}): QueueCounts {
  return { queue, queued: 0, scheduled: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, ...c };
}

describe('EventBatcher', () => {
  it('applies many events in one flush per scheduled frame', () => {
    const frames: (() => void)[] = [];
    const flushed: number[][] = [];
    const b = new EventBatcher<number>((batch) => flushed.push(batch), (run) => frames.push(run));
    for (let i = 0; i < 1000; i++) b.push(i);
    expect(frames).toHaveLength(1); // one frame requested, not one per event
    expect(flushed).toHaveLength(0);
    frames.shift()!();
    expect(flushed).toHaveLength(1);
    expect(flushed[0]).toHaveLength(1000);
    expect(flushed[0][999]).toBe(999);

    b.push(1);
    b.push(2);
    expect(frames).toHaveLength(1);
    frames.shift()!();
    expect(flushed[1]).toEqual([1, 2]);
  });

  it('tolerates an early flush', () => {
    const frames: (() => void)[] = [];
    const flushed: number[][] = [];
    const b = new EventBatcher<number>((batch) => flushed.push(batch), (run) => frames.push(run));
    b.push(1);
    b.flush();
    frames.shift()!(); // the scheduled run finds nothing
    expect(flushed).toEqual([[1]]);
  });
});

describe('RecentIds', () => {
  it('drops duplicates and forgets old ids past its cap', () => {
    const s = new RecentIds(4);
    expect(s.add('1')).toBe(true);
    expect(s.add('1')).toBe(false);
    expect(s.add('2')).toBe(true);
    expect(s.add('3')).toBe(true);
    expect(s.add('2')).toBe(false); // still remembered (the last cap/2 at least)
    expect(s.add('4')).toBe(true);
    expect(s.add('5')).toBe(true);
    expect(s.add('1')).toBe(true); // forgotten
  });
});

describe('normalizeEvent and ids', () => {
  it('accepts `id` for `eventId` and numbers for ids', () => {
    const e = normalizeEvent({ id: 7, jobId: 42, type: 'claimed', status: 'running', attempt: 1, at: 'x', data: { lagMs: 3 } });
    expect(e?.eventId).toBe('7');
    expect(e?.jobId).toBe('42');
    expect(normalizeEvent({ nope: true })).toBeNull();
  });
  it('compares digit ids numerically', () => {
    expect(compareIds('9', '10')).toBeLessThan(0);
    expect(compareIds('100', '99')).toBeGreaterThan(0);
    expect(compareIds('42', '42')).toBe(0);
  });
});

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
});

describe('mergeIntoPage (jobs table)', () => {
  function job(id: string, status: JobStatus = 'queued', queue = 'default'): Job {
    return {
      id, queue, kind: 'sleep', payload: {}, priority: 0, status, attempt: 0, maxAttempts: 5, requires: [],
      idempotencyKey: null, runAt: null, createdAt: null, startedAt: null, finishedAt: null, lockedBy: null,
      leaseExpiresAt: null, cancelRequested: false, progress: null, result: null, lastError: null,
    };
  }

  it('updates rows in place: status, attempt, progress, lock', () => {
    const rows = [job('3'), job('2')];
    const r = mergeIntoPage(
      rows,
      [
        ev('2', 'claimed', 'running', { worker: 'w9', data: { leaseExpiresAt: '2026-01-01T00:00:30Z', lagMs: 2 } }),
        ev('2', 'progress', 'running', { worker: 'w9', data: { percent: 40, message: 'working' } }),
      ],
      { filter: {}, limit: 50, firstPage: true, next: null },
    );
    expect(r.rows[1]).toMatchObject({ status: 'running', attempt: 1, lockedBy: 'w9', progress: { percent: 40, message: 'working' } });
  });

  it("takes a failure's message from the event (the server sends data.error as a string)", () => {
    const rows = [job('2', 'running')];
    mergeIntoPage(rows, [ev('2', 'retry_scheduled', 'queued', { data: { error: 'boom', runAt: '2026-01-01T00:00:30Z' } })], {
      filter: {}, limit: 50, firstPage: true, next: null,
    });
    expect(rows[0].lastError).toEqual({ message: 'boom' });
    mergeIntoPage(rows, [ev('2', 'failed', 'failed', { data: { error: { message: 'bang' } } })], {
      filter: {}, limit: 50, firstPage: true, next: null,
    });
    expect(rows[0].lastError).toEqual({ message: 'bang' });
  });

  it('puts new matching jobs on top of the first page and keeps it bounded', () => {
    const rows = [job('3'), job('2'), job('1')];
    const batch = [ev('4', 'enqueued', 'queued'), ev('5', 'enqueued', 'queued', { queue: 'other' }), ev('6', 'enqueued', 'queued')];
    const r = mergeIntoPage(rows, batch, { filter: { queue: 'default' }, limit: 3, firstPage: true, next: null });
    expect(r.rows.map((j) => j.id)).toEqual(['6', '4', '3']);
    expect(r.next).toBe('3'); // paging continues after the last kept row
    expect(r.rows[0].partial).toBe(true);
  });

  it('adds nothing on later pages, and ignores older jobs that belong to a later page', () => {
    const rows = [job('30'), job('20')];
    expect(mergeIntoPage(rows, [ev('40', 'enqueued', 'queued')], { filter: {}, limit: 2, firstPage: false, next: '20' }).changed).toBe(false);
    const r = mergeIntoPage(rows, [ev('10', 'failed', 'failed')], { filter: { status: 'failed' }, limit: 2, firstPage: true, next: '20' });
    expect(r.changed).toBe(false);
    const r2 = mergeIntoPage(rows, [ev('25', 'failed', 'failed')], { filter: { status: 'failed' }, limit: 5, firstPage: true, next: null });
    expect(r2.rows.map((j) => j.id)).toEqual(['30', '25', '20']);
  });
});

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
});

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

describe('StreamClient (reconnect cursor)', () => {
  class FakeSource implements SourceLike {
    readyState = CONNECTING;
    onopen: ((ev: Event) => unknown) | null = null;
    onerror: ((ev: Event) => unknown) | null = null;
    listeners = new Map<string, ((ev: MessageEvent) => void)[]>();
    closed = false;
    constructor(readonly url: string) {}
    addEventListener(type: string, fn: (ev: MessageEvent) => void) {
      this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
    }
    close() {
      this.closed = true;
      this.readyState = CLOSED;
    }
    open() {
      this.readyState = 1;
      this.onopen?.(new Event('open'));
    }
    emit(id: string, data: object) {
      const m = { data: JSON.stringify(data), lastEventId: id } as MessageEvent;
      for (const fn of this.listeners.get('job') ?? []) fn(m);
    }
    fail(hard: boolean) {
      this.readyState = hard ? CLOSED : CONNECTING;
      this.onerror?.(new Event('error'));
    }
  }

  function setup(token: string | null = null) {
    const sources: FakeSource[] = [];
    const timers: { fn: () => void; ms: number }[] = [];
    const states: string[] = [];
    const events: JobEvent[] = [];
    const opens: { first: boolean; resumed: boolean }[] = [];
    let allowed = true;
    const c = new StreamClient({
      url: '/api/events',
      createSource: (url) => {
        const s = new FakeSource(url);
        sources.push(s);
        return s;
      },
      getToken: () => token,
      onState: (s) => states.push(s),
      onEvent: (e) => events.push(e),
      onOpen: (i) => opens.push(i),
      canConnect: () => allowed,
      setTimer: (fn, ms) => timers.push({ fn, ms }),
      clearTimer: () => {},
      random: () => 1,
    });
    return { c, sources, timers, states, events, opens, block: (b: boolean) => (allowed = !b) };
  }

  const payload = (eventId: number) => ({ eventId, jobId: 1, queue: 'q', kind: 'k', type: 'enqueued', status: 'queued', attempt: 0, worker: null, at: 'x', data: {} });

  it('builds the stream URL with token and cursor', () => {
    expect(streamUrl('/api/events', {})).toBe('/api/events');
    expect(streamUrl('/api/events', { token: 'a b', lastEventId: '12:34' })).toBe('/api/events?token=a+b&lastEventId=12%3A34');
  });

  it('tracks the last id, lets the browser retry soft errors, and resumes hard failures from the cursor', () => {
    const { c, sources, timers, states, events, opens } = setup('tok');
    c.start();
    expect(sources[0].url).toBe('/api/events?token=tok');
    sources[0].open();
    expect(states).toEqual(['live']);
    sources[0].emit('c-1', payload(1));
    sources[0].emit('c-2', payload(2));
    expect(events.map((e) => e.eventId)).toEqual(['1', '2']);
    expect(c.lastId).toBe('c-2');

    // soft error: the browser reconnects by itself with Last-Event-ID; no new source from us
    sources[0].fail(false);
    expect(states.at(-1)).toBe('reconnecting');
    expect(sources).toHaveLength(1);
    expect(timers).toHaveLength(0);
    sources[0].open();
    expect(states.at(-1)).toBe('live');

    // hard failure: a new EventSource after a backoff, resuming from the last id
    sources[0].fail(true);
    expect(states.at(-1)).toBe('reconnecting');
    expect(timers).toHaveLength(1);
    expect(timers[0].ms).toBe(500);
    timers.shift()!.fn();
    expect(sources).toHaveLength(2);
    expect(sources[1].url).toBe('/api/events?token=tok&lastEventId=c-2');

    // failing again backs off further
    sources[1].fail(true);
    expect(timers[0].ms).toBe(1000);
    timers.shift()!.fn();
    expect(sources[2].url).toContain('lastEventId=c-2');
    sources[2].open();
    expect(opens.at(-1)).toEqual({ first: false, resumed: true });
    // events from the old, abandoned source are ignored
    sources[0].emit('c-9', payload(9));
    expect(c.lastId).toBe('c-2');
    // a successful open resets the backoff
    sources[2].fail(true);
    expect(timers[0].ms).toBe(500);
  });

  it('accepts event data that was JSON-encoded twice', () => {
    const { c, sources, events } = setup();
    c.start();
    sources[0].open();
    const m = { data: JSON.stringify(JSON.stringify(payload(5))), lastEventId: '9.5' } as MessageEvent;
    for (const fn of sources[0].listeners.get('job') ?? []) fn(m);
    expect(events.map((e) => e.eventId)).toEqual(['5']);
    expect(c.lastId).toBe('9.5');
  });

  it('reports a reopen without a cursor (so views reload) and waits for a token when told to', () => {
    const { c, sources, timers, opens, block } = setup();
    c.start();
    sources[0].open();
    sources[0].fail(true);
    block(true); // e.g. a 401 opened the token prompt
    timers.shift()!.fn();
    expect(sources).toHaveLength(1);
    block(false);
    c.restart();
    expect(sources).toHaveLength(2);
    sources[1].open();
    expect(opens).toEqual([
      { first: true, resumed: false },
      { first: false, resumed: false },
    ]);
  });

  it('backs off up to a cap', () => {
    expect(backoffDelay(0, () => 1)).toBe(500);
    expect(backoffDelay(3, () => 1)).toBe(4000);
    expect(backoffDelay(30, () => 1)).toBe(15000);
    expect(backoffDelay(30, () => 0)).toBe(7500);
  });
});

describe('routes', () => {
  it('parses hash routes', () => {
    expect(parseHash('')).toEqual({ name: 'overview' });
    expect(parseHash('#/jobs?queue=a&status=failed')).toEqual({ name: 'jobs', query: { queue: 'a', status: 'failed' } });
    expect(parseHash('#/jobs/42')).toEqual({ name: 'job', id: '42' });
    expect(parseHash('#/health')).toEqual({ name: 'health' });
    expect(parseHash('#/nope')).toEqual({ name: 'notfound', path: '/nope' });
    expect(href('/jobs', { queue: 'a', status: '' })).toBe('#/jobs?queue=a');
  });
});

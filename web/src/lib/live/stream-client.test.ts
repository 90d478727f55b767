// Unit tests for the stream connection (stream-client.ts), with a fake EventSource and fake timers: no browser, no server.

import { describe, expect, it } from 'vitest';
import type { BoardEvent } from '../types';
import { backoffDelay, CLOSED, CONNECTING, parseEvent, StreamClient, streamUrl, type SourceLike } from './stream-client';

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

  function setup(token: string | null = null, onData?: (data: unknown) => void) {
    const sources: FakeSource[] = [];
    const timers: { fn: () => void; ms: number }[] = [];
    const states: string[] = [];
    const events: BoardEvent[] = [];
    const opens: { first: boolean; resumed: boolean }[] = [];
    let allowed = true;
    let resets = 0;
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
      onData,
      onOpen: (i) => opens.push(i),
      onReset: () => resets++,
      canConnect: () => allowed,
      setTimer: (fn, ms) => timers.push({ fn, ms }),
      clearTimer: () => {},
      random: () => 1,
    });
    return { c, sources, timers, states, events, opens, resets: () => resets, block: (b: boolean) => (allowed = !b) };
  }

  const payload = (eventId: number) => ({ eventId, jobId: 1, queue: 'q', kind: 'k', type: 'enqueued', status: 'queued', attempt: 0, worker: null, at: 'x', data: {} });

  // Catches onData ignored (every message parsed at once, in the browser's task) and the cursor
  // not moved when the data is only kept.
  it('hands each message on unparsed with onData, moving the cursor all the same', () => {
    const raw: unknown[] = [];
    const { c, sources, events } = setup(null, (d) => raw.push(d));
    c.start();
    sources[0].open();
    sources[0].emit('c-1', payload(1));
    sources[0].emit('c-2', payload(2));
    expect(events).toEqual([]);
    expect(c.lastId).toBe('c-2');
    expect(raw.map((d) => parseEvent(d)?.eventId)).toEqual(['1', '2']);
    expect(parseEvent(JSON.stringify(JSON.stringify(payload(3))))?.eventId).toBe('3'); // encoded twice
    expect(parseEvent('{not json')).toBeNull();
  });

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

  it('tells the store to reload on event: reset (retention removed events after its cursor)', () => {
    const { c, sources, events, resets } = setup();
    c.start();
    sources[0].open();
    for (const fn of sources[0].listeners.get('reset') ?? []) fn({ data: '{"removedThrough":"5.9"}', lastEventId: '' } as MessageEvent);
    expect(resets()).toBe(1);
    expect(events).toEqual([]);
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

// The fan-out hands each subscriber exactly its events, in feed order, with data built once.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { describe, expect, it } from 'vitest';
import type { JobEvent } from '../../queue/job.ts';
import { Fanout, toMessage, type StreamMessage, type Subscriber } from './fanout.ts';

let n = 0;
const event = (jobId: string, queue: string, type: JobEvent['type'] = 'enqueued', status: JobEvent['status'] = 'queued'): JobEvent => {
  n++;
  return { eventId: String(n), jobId, queue, kind: 'k', type, status, attempt: 0, worker: null, at: new Date(0).toISOString(), data: null, flowId: null, cursor: `${1000 + n}.${n}` };
};

function subscriber(filter: Subscriber['filter']) {
  const got: StreamMessage[][] = [];
  return { filter, got, deliver: (m: StreamMessage[]) => got.push(m) };
}

describe('Fanout', () => {
  it('delivers by filter: everything, one queue, one job (and both), in order; nothing to the uninterested', () => {
    const f = new Fanout();
    const all = subscriber({});
    const qa = subscriber({ queue: 'a' });
    const qc = subscriber({ queue: 'c' });
    const j2 = subscriber({ jobId: '2' });
    const j2b = subscriber({ jobId: '2', queue: 'b' });
    for (const s of [all, qa, qc, j2, j2b]) f.subscribe(s);
    const events = [event('1', 'a'), event('2', 'b'), event('3', 'a'), event('2', 'b', 'claimed', 'running')];
    f.publish(events);
    const ids = (s: { got: StreamMessage[][] }) => s.got.flat().map((m) => m.event.eventId);
    expect(ids(all)).toEqual(events.map((e) => e.eventId));
    expect(ids(qa)).toEqual([events[0].eventId, events[2].eventId]);
    expect(qc.got).toEqual([]);
    expect(ids(j2)).toEqual([events[1].eventId, events[3].eventId]);
    expect(ids(j2b)).toEqual(ids(j2));
    // One message object per event, shared by every subscriber.
    expect(qa.got[0][0]).toBe(all.got[0][0]);
  });

  // Mutations caught: publish() calling observers unguarded (`fn(events)` for `this.guarded(fn, events)`),
  // or a subscriber (`s.deliver(messages)` for `this.send(s, messages)`).
  it('a throwing observer or watcher loses no page for any stream, and is reported', () => {
    const errors: unknown[] = [];
    const f = new Fanout((err) => errors.push(err));
    f.observe(() => {
      throw new Error('metrics broke');
    });
    f.watchJob('1', () => {
      throw new Error('wait broke');
    });
    // A stream whose delivery throws, subscribed first: the others still get the page.
    f.subscribe({ filter: {}, deliver: () => { throw new Error('socket broke'); } });
    const all = subscriber({});
    const qa = subscriber({ queue: 'a' });
    f.subscribe(all);
    f.subscribe(qa);
    const events = [event('1', 'a'), event('2', 'a')];
    f.publish(events);
    expect(all.got.flat().map((m) => m.event.eventId)).toEqual(events.map((e) => e.eventId));
    expect(qa.got.flat()).toHaveLength(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['metrics broke', 'wait broke', 'socket broke']);
  });

  it('stops delivering after unsubscribe', () => {
    const f = new Fanout();
    const s = subscriber({ queue: 'a' });
    const off = f.subscribe(s);
    expect(f.size).toBe(1);
    off();
    expect(f.size).toBe(0);
    f.publish([event('1', 'a')]);
    expect(s.got).toEqual([]);
  });

  it('calls job watchers and observers', () => {
    const f = new Fanout();
    const seen: string[] = [];
    const off = f.watchJob('7', (e) => seen.push(e.type));
    let pages = 0;
    f.observe(() => pages++);
    f.publish([event('7', 'q'), event('8', 'q'), event('7', 'q', 'succeeded', 'succeeded')]);
    off();
    f.publish([event('7', 'q', 'retried')]);
    expect(seen).toEqual(['enqueued', 'succeeded']);
    expect(pages).toBe(2);
  });

  it('frames the SSE message once: id is the cursor, data the event without it', () => {
    const e = event('5', 'q');
    const m = toMessage(e);
    const parsed: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (x) => parsed.push(x) });
    parser.feed(m.frame.toString('utf8'));
    const { cursor: _, ...rest } = e;
    expect(parsed).toHaveLength(1);
    expect(parsed[0]).toMatchObject({ id: e.cursor, event: 'job' });
    expect(JSON.parse(parsed[0].data)).toEqual(rest);
    expect(m.bytes).toBe(m.frame.length);
    expect([m.tx, m.id]).toEqual([BigInt(e.cursor.split('.')[0]), BigInt(e.cursor.split('.')[1])]);
  });

  it('hands every subscriber the same encoded frame', () => {
    const f = new Fanout();
    const frames: Buffer[][] = [];
    for (const filter of [{}, {}, { queue: 'q' }]) f.subscribe({ filter, deliver: (ms) => frames.push(ms.map((m) => m.frame)) });
    f.publish([event('5', 'q')]);
    expect(frames).toHaveLength(3);
    expect(frames[1][0]).toBe(frames[0][0]);
    expect(frames[2][0]).toBe(frames[0][0]);
  });

  it('frames it as one HTTP/1.1 chunk too, the frame a view into it (bytes counted in UTF-8, not characters)', () => {
    const m = toMessage({ ...event('6', 'q'), data: { note: 'déjà vu ✓' } });
    const size = m.frame.length.toString(16);
    expect(m.chunk.toString('utf8')).toBe(`${size}\r\n${m.frame.toString('utf8')}\r\n`);
    expect(m.frame.buffer).toBe(m.chunk.buffer);
    expect(m.frame.length).toBeGreaterThan(m.frame.toString('utf8').length);
  });
});

// Unit tests for the stream read with fetch (fetch-source.ts), with a fake fetch and a fake
// clock: no browser, no server.

import { describe, expect, it } from 'vitest';
import { FetchSource } from './fetch-source';
import { CLOSED } from './stream-client';

const frame = (i: number) => `id: 1.${i}\nevent: job\ndata: {"i":${i}}\n\n`;

function streamOf(pieces: string[]): { response: Response; push(text: string): void; end(): void } {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) });
  const enc = new TextEncoder();
  for (const p of pieces) ctl.enqueue(enc.encode(p));
  return {
    response: new Response(body, { headers: { 'content-type': 'text/event-stream' } }),
    push: (text) => ctl.enqueue(enc.encode(text)),
    end: () => ctl.close(),
  };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('FetchSource', () => {
  it('opens, hands each event to the listeners of its type, and reports the stream ending as CLOSED', async () => {
    const s = streamOf([frame(1) + frame(2).slice(0, 10), frame(2).slice(10)]);
    const src = new FetchSource('/api/events', { fetch: async () => s.response });
    const seen: string[] = [];
    let opened = 0, errors = 0;
    src.onopen = () => void opened++;
    src.onerror = () => void errors++;
    src.addEventListener('job', (m) => seen.push(`${m.lastEventId} ${String(m.data)}`));
    await settle();
    expect(opened).toBe(1);
    expect(seen).toEqual(['1.1 {"i":1}', '1.2 {"i":2}']);
    s.end();
    await settle();
    expect(src.readyState).toBe(CLOSED);
    expect(errors).toBe(1);
  });

  it('fails CLOSED on an error status, and stays quiet once closed by its owner', async () => {
    const denied = new FetchSource('/api/events', { fetch: async () => new Response('no', { status: 401 }) });
    let errors = 0;
    denied.onerror = () => void errors++;
    await settle();
    expect([denied.readyState, errors]).toEqual([CLOSED, 1]);

    const s = streamOf([frame(1)]);
    const closed = new FetchSource('/api/events', { fetch: async () => s.response });
    closed.onerror = () => void errors++;
    await settle();
    closed.close();
    s.end();
    await settle();
    expect(errors).toBe(1);
  });

  // Catches the slice check dropped (every event in one go: the long task this file exists to
  // prevent) and `sliceStart` not reset after a yield (a yield before every event after the first).
  it('yields to the page whenever a slice has used its time, and not otherwise', async () => {
    let clock = 0;
    const log: string[] = [];
    const s = streamOf([Array.from({ length: 10 }, (_, i) => frame(i)).join('')]);
    const src = new FetchSource('/api/events', {
      fetch: async () => s.response,
      now: () => clock,
      sliceMs: 8,
      yieldToPage: async () => void log.push('yield'),
    });
    src.addEventListener('job', (m) => {
      log.push(m.lastEventId);
      clock += 3; // each event costs 3 ms: a slice holds three
    });
    await settle();
    expect(log).toEqual(['1.0', '1.1', '1.2', 'yield', '1.3', '1.4', '1.5', 'yield', '1.6', '1.7', '1.8', 'yield', '1.9']);
  });
});

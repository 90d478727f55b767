// The SSE stream's bytes on the wire. Events are written straight to the socket, each one
// framed once as an HTTP/1.1 chunk shared by every client (server/stream/session.ts), so these
// read the raw TCP stream and decode it strictly: every chunk's size line matches its bytes,
// every event is one chunk, and what the library writes itself (the start id) interleaves in
// order. An HTTP/1.0 client gets no chunking: bare frames.
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { s, useStreamServer } from './support/stream.ts';
import { waitFor } from './support/wait.ts';

const { rows } = useStreamServer();
const rowIds = async () => (await rows()).map((r) => r.id);

/** A GET over a bare socket; `bytes` is everything received so far. */
function rawGet(path: string, version: '1.0' | '1.1', headers: Record<string, string> = {}) {
  const url = new URL(s.url);
  const socket = net.connect(Number(url.port), url.hostname);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const lines = Object.entries({ host: url.host, accept: 'text/event-stream', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.write(`GET ${path} HTTP/${version}\r\n${lines.join('')}\r\n`);
  return { bytes: () => Buffer.concat(chunks), close: () => socket.destroy() };
}

/** Splits a response into its head and body. */
function split(raw: Buffer): { head: string; body: Buffer } {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return { head: '', body: Buffer.alloc(0) };
  return { head: raw.subarray(0, end).toString('latin1').toLowerCase(), body: raw.subarray(end + 4) };
}

/** Strict chunked decoding of what has arrived: the whole chunks, and what is left over (a chunk still arriving). */
function dechunk(body: Buffer): { chunks: string[]; rest: number } {
  const chunks: string[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) break;
    const sizeLine = body.toString('latin1', at, eol);
    expect(sizeLine, `chunk size line at byte ${at}`).toMatch(/^[0-9a-f]+$/);
    const size = parseInt(sizeLine, 16);
    if (eol + 2 + size + 2 > body.length) break;
    expect(body.toString('latin1', eol + 2 + size, eol + 4 + size), `chunk ending at byte ${eol + 2 + size}`).toBe('\r\n');
    chunks.push(body.toString('utf8', eol + 2, eol + 2 + size));
    at = eol + 4 + size;
  }
  return { chunks, rest: body.length - at };
}

const eventIds = (frames: string[]) => frames.filter((f) => f.includes('event: job')).map((f) => /"eventId":"(\d+)"/.exec(f)![1]);

describe('the SSE stream on the wire', () => {
  it('HTTP/1.1, live: the start id, then each event as exactly one well-formed chunk, in feed order', async () => {
    const c = rawGet('/api/events', '1.1');
    try {
      await waitFor(() => dechunk(split(c.bytes()).body).chunks.some((f) => f.startsWith('id: ')), { what: 'the start id' });
      // One page of three (one transaction) and then one more: several pending at once, and one alone.
      await s.queue.enqueueMany([{ kind: 'k' }, { kind: 'k' }, { kind: 'k' }]);
      await s.queue.enqueue({ kind: 'k' });
      const expected = await rowIds();
      expect(expected).toHaveLength(4);
      await waitFor(() => eventIds(dechunk(split(c.bytes()).body).chunks).length === 4, { what: 'four event chunks' });
      const { head, body } = split(c.bytes());
      expect(head).toMatch(/^http\/1\.1 200/);
      expect(head).toContain('transfer-encoding: chunked');
      const { chunks, rest } = dechunk(body);
      expect(rest).toBe(0);
      expect(chunks[0]).toMatch(/^id: \d+\.\d+\n\n$/);
      const events = chunks.filter((f) => f.includes('event: job'));
      for (const f of events) expect(f).toMatch(/^id: \d+\.\d+\nevent: job\ndata: \{[^\n]*\}\n\n$/);
      expect(eventIds(events)).toEqual(expected);
    } finally {
      c.close();
    }
  });

  it('HTTP/1.1, a replay from 0: every stored event as a chunk, in feed order, then live ones', async () => {
    await s.queue.enqueueMany(Array.from({ length: 50 }, () => ({ kind: 'k' })));
    const c = rawGet('/api/events', '1.1', { 'last-event-id': '0' });
    try {
      await waitFor(() => eventIds(dechunk(split(c.bytes()).body).chunks).length === 50, { what: 'the replay' });
      await s.queue.enqueue({ kind: 'k' });
      await waitFor(() => eventIds(dechunk(split(c.bytes()).body).chunks).length === 51, { what: 'the live event after the replay' });
      const { chunks, rest } = dechunk(split(c.bytes()).body);
      expect(rest).toBe(0);
      expect(eventIds(chunks)).toEqual(await rowIds());
    } finally {
      c.close();
    }
  });

  it('HTTP/1.0: no chunking, the frames as they are', async () => {
    const c = rawGet('/api/events', '1.0');
    try {
      await waitFor(() => split(c.bytes()).body.toString().startsWith('id: '), { what: 'the start id' });
      await s.queue.enqueue({ kind: 'k' });
      await waitFor(() => split(c.bytes()).body.toString().includes('event: job'), { what: 'the event' });
      const { head, body } = split(c.bytes());
      expect(head).toMatch(/^http\/1\.[01] 200/);
      expect(head).not.toContain('transfer-encoding');
      const frames = body.toString().split('\n\n').filter(Boolean);
      expect(frames).toHaveLength(2);
      expect(frames[0]).toMatch(/^id: \d+\.\d+$/);
      expect(frames[1]).toMatch(/^id: \d+\.\d+\nevent: job\ndata: \{[^\n]*\}$/);
      expect(eventIds([`${frames[1]}\n\n`])).toEqual(await rowIds());
    } finally {
      c.close();
    }
  });
});

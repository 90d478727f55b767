// A client that stops reading: its buffer is bounded, the server drops it past the bound
// (without disturbing a healthy client), and when it resumes with Last-Event-ID it has lost nothing.
import http from 'node:http';
import { createParser } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeraldClient, type StreamEvent } from '../client/index.ts';
import { testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer({ listen: true, streamLimits: { maxEvents: 2000 } });
});
afterAll(() => s.close());

describe('slow clients', () => {
  it('drops a client that stops reading, keeps the others, and the dropped one resumes without loss', async () => {
    // The slow client: a raw request whose response we stop reading at once.
    const received: { id: string; eventId: string }[] = [];
    const parser = createParser({ onEvent: (m) => received.push({ id: m.id!, eventId: JSON.parse(m.data).eventId }) });
    let ended = false;
    const res = await new Promise<http.IncomingMessage>((resolve) => http.get(`${s.url}/api/events?lastEventId=0`, resolve));
    expect(res.statusCode).toBe(200);
    res.pause();
    res.on('data', (chunk: Buffer) => parser.feed(chunk.toString('utf8')));
    res.on('end', () => (ended = true));
    res.on('error', () => (ended = true));

    // A healthy client alongside it.
    const healthy: StreamEvent[] = [];
    const healthyStream = new HeraldClient({ baseUrl: s.url }).events({ lastEventId: '0' });
    const healthyDone = (async () => {
      for await (const e of healthyStream) healthy.push(e);
    })();

    // Events until the paused one overflows (socket buffers first, then its 2000 events).
    await waitFor(() => s.hub.sessions.size === 2, { what: 's.hub.sessions.size === 2' });
    let batches = 0;
    while (s.hub.droppedClients === 0) {
      await s.db.queue.enqueueMany(Array.from({ length: 500 }, (_, i) => ({ kind: 'filler', payload: { i, pad: 'x'.repeat(200) } })));
      batches++;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(s.hub.droppedClients).toBe(1);
    await waitFor(() => s.hub.sessions.size === 1, { what: 's.hub.sessions.size === 1' });
    const metrics = await s.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/herald_sse_clients_dropped_total 1/);
    expect(metrics.body).toMatch(/herald_sse_clients 1/);

    // It reads what was written before the cut, then the stream ends.
    res.resume();
    await waitFor(() => ended, { what: 'ended' });
    const total = batches * 500;
    expect(received.length).toBeGreaterThan(0);
    expect(received.length).toBeLessThan(total);

    // Resuming from its last id gives exactly the rest.
    const rest: StreamEvent[] = [];
    const resumed = new HeraldClient({ baseUrl: s.url }).events({ lastEventId: received[received.length - 1].id });
    for await (const e of resumed) {
      rest.push(e);
      if (received.length + rest.length === total) break;
    }
    const { rows } = await s.db.pool.query('SELECT id FROM herald.job_events ORDER BY tx, id');
    expect([...received, ...rest].map((e) => e.eventId)).toEqual(rows.map((r) => r.id));

    // The healthy client got everything, undisturbed.
    await waitFor(() => healthy.length === total, { what: 'healthy.length === total' });
    expect(healthy.map((e) => e.eventId)).toEqual(rows.map((r) => r.id));
    expect(healthyStream.reconnects).toBe(0);
    healthyStream.close();
    await healthyDone;
  });

  it('closes with streams open, even one whose client stopped reading', async () => {
    const other = await testServer({ db: s.db, listen: true });
    const paused = await new Promise<http.IncomingMessage>((resolve) => http.get(`${other.url}/api/events?lastEventId=0`, resolve));
    paused.pause();
    paused.on('error', () => {});
    const live = new HeraldClient({ baseUrl: other.url }).events();
    const it = live[Symbol.asyncIterator]();
    const first = it.next();
    await waitFor(() => other.hub.sessions.size === 2, { what: 'other.hub.sessions.size === 2' });
    await other.close();
    expect(other.hub.sessions.size).toBe(0);
    live.close();
    await first;
    paused.destroy();
  });
});

// The SSE stream over real HTTP, one client at a time: it starts live at the head, replays from a
// cursor and goes on live, refuses cursors and clients it cannot serve, keeps an idle stream
// alive, and caps how many streams are open. What a client receives is checked against the
// job_events rows.
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { createParser } from 'eventsource-parser';
import { HeraldApiError } from '../client/index.ts';
import { compareCursor, parseCursor, type Cursor } from '../queue/cursor.ts';
import { openStream, testServer } from './server-support.ts';
import { client, expectSameAsRows, s, useStreamServer } from './support/stream.ts';
import { waitFor } from './support/wait.ts';

const { db, rows, open, collect } = useStreamServer();

describe('live stream', () => {
  it('starts at the head: only events after the connection, in the contract shape', async () => {
    const { job: before } = await db.queue.enqueue({ kind: 'before' });
    const { rows: [mark] } = await db.pool.query<Cursor>(`SELECT tx::text, id::text FROM herald.job_events WHERE job_id = $1`, [before.id]);
    const atOrPastBefore = (cursor: string) => compareCursor(parseCursor(cursor), mark) >= 0;
    // The head is the newest event below the horizon. Another database's transaction that ends
    // while the start reads the horizon can hold it below "before" for that one read (so "before"
    // is rightly sent, as the stream then starts from there): open again until the head is past it.
    let stream = await openStream(`${s.url}/api/events`);
    for (let i = 0; i < 20 && !atOrPastBefore(stream.res.headers.get('herald-cursor') ?? '0'); i++) {
      await stream.close();
      stream = await openStream(`${s.url}/api/events`);
    }
    expect(stream.res.status).toBe(200);
    expect(stream.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.res.headers.get('herald-cursor')).toMatch(/^\d+\.\d+$/);
    expect(atOrPastBefore(stream.res.headers.get('herald-cursor')!)).toBe(true);
    // The fetch resolved, so the server has subscribed this client: nothing after this is missed.
    const { job } = await db.queue.enqueue({ kind: 'after', queue: 'q1', payload: { x: 1 } });
    // A later event marks the end: anything else (a repeat, an event from before the start)
    // would have come before it. Caught: the fan-out handing a page to a subscriber twice.
    const { job: marker } = await db.queue.enqueue({ kind: 'marker', queue: 'q1' });
    await waitFor(() => stream.messages.some((m) => m.json?.jobId === marker.id), { what: 'the marker event' });
    expect(stream.messages.map((m) => m.json!.jobId)).toEqual([job.id, marker.id]);
    const [m] = stream.messages;
    expect(m.event).toBe('job');
    expect(m.id).toMatch(/^\d+\.\d+$/);
    expect(m.json).toEqual({
      eventId: expect.any(String), jobId: job.id, queue: 'q1', kind: 'after', type: 'enqueued', status: 'queued',
      attempt: 0, worker: null, at: expect.any(String), data: { priority: 0, runAt: expect.any(String), maxAttempts: 5 }, flowId: null,
    });
    await stream.close();
  });

  it('gives every time in event data as ISO 8601 UTC with a Z, like `at`', async () => {
    const stream = await openStream(`${s.url}/api/events`);
    const runAt = new Date(Date.now() - 1000).toISOString();
    const { job } = await db.queue.enqueue({ kind: 'times', runAt, maxAttempts: 2 });
    const [lease] = await db.queue.claim({ worker: 'w', limit: 1, leaseMs: 60_000 });
    await db.queue.fail('w', [{ id: lease.id, attempt: lease.attempt, error: new Error('again') }]);
    await waitFor(() => stream.messages.length === 3, { what: 'stream.messages.length === 3' });
    const byType: Record<string, { at: string; data: Record<string, string> }> = Object.fromEntries(
      stream.messages.map((m) => [m.json!.type as string, m.json as { at: string; data: Record<string, string> }]),
    );
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
    for (const e of Object.values(byType)) expect(e.at).toMatch(iso);
    expect(byType.enqueued.data.runAt).toBe(runAt);
    expect(byType.claimed.data.leaseExpiresAt).toMatch(iso);
    expect(byType.retry_scheduled.data.runAt).toMatch(iso);
    expect(byType.retry_scheduled.data.runAt).toBe((await db.queue.get(job.id))!.runAt);
    await stream.close();
  });

  it('replays from 0, then goes on live', async () => {
    const first = await db.queue.enqueueMany(Array.from({ length: 30 }, () => ({ kind: 'k' })));
    const { events, done } = collect(client.events({ lastEventId: '0' }));
    await waitFor(() => events.length === 30, { what: 'events.length === 30' });
    await db.queue.enqueue({ kind: 'live' });
    await waitFor(() => events.length === 31, { what: 'events.length === 31' });
    expectSameAsRows(events, await rows());
    expect(events[0].jobId).toBe(first[0].job.id);
    expect(events[30].kind).toBe('live');
    open.pop()!.close();
    await done;
  });

  it('replays pages far larger than the socket buffer to a client that reads late, without piling up drain listeners', async () => {
    // 2,500 events of ~1 kB: each replay page is ~60 socket buffers. Writing a page without
    // waiting for 'drain' queued one listener per write (MaxListenersExceededWarning), which
    // test/support/no-warnings.ts turns into a failure of this test.
    await db.queue.enqueueMany(Array.from({ length: 2500 }, (_, i) => ({ kind: 'k', payload: { i, pad: 'x'.repeat(900) } })));
    const seen: string[] = [];
    const parser = createParser({ onEvent: (m) => m.data && seen.push(JSON.parse(m.data).eventId) });
    const res = await new Promise<http.IncomingMessage>((resolve) => http.get(`${s.url}/api/events?lastEventId=0`, resolve));
    res.pause();
    await waitFor(() => s.hub.sessions.size > 0, { what: 's.hub.sessions.size > 0' });
    res.on('data', (chunk: Buffer) => parser.feed(chunk.toString('utf8')));
    res.resume();
    await waitFor(() => seen.length === 2500, { what: 'seen.length === 2500' });
    expect(seen).toEqual((await rows()).map((r) => r.id));
    res.destroy();
    await waitFor(() => s.hub.sessions.size === 0, { what: 's.hub.sessions.size === 0' });
  });

  it('resumes a live-only client from where it began, even before its first event', async () => {
    const stream = client.events();
    const { events, done } = collect(stream);
    await waitFor(() => stream.lastEventId !== undefined, { what: 'stream.lastEventId !== undefined' });
    stream.reconnect();
    await db.queue.enqueueMany(Array.from({ length: 5 }, () => ({ kind: 'k' })));
    await waitFor(() => events.length === 5, { what: 'events.length === 5' });
    expectSameAsRows(events, await rows());
    stream.close();
    await done;
  });

  it('answers 400 to a cursor it never sent, in the header or the query', async () => {
    for (const headers of [{ 'last-event-id': 'garbage' }, { 'last-event-id': '1.2.3' }]) {
      const res = await fetch(`${s.url}/api/events`, { headers });
      expect(res.status).toBe(400);
      expect((await res.json()).message).toMatch(/is not a cursor this server issued/);
    }
    expect((await fetch(`${s.url}/api/events?lastEventId=nope`)).status).toBe(400);
    await expect(collect(client.events({ lastEventId: 'x.y' })).done).rejects.toBeInstanceOf(HeraldApiError);
    // The header wins over ?lastEventId (EventSource resends the header, the URL keeps the first id).
    const ok = await openStream(`${s.url}/api/events?lastEventId=nope`, { 'last-event-id': '0' });
    expect(ok.res.status).toBe(200);
    await ok.close();
  });

  it('sends a keep-alive comment on an idle stream (every 15 s by default)', async () => {
    const quick = await testServer({ db, listen: true, heartbeatMs: 50 });
    try {
      const comments: string[] = [];
      const parser = createParser({ onEvent: () => {}, onComment: (c) => comments.push(c) });
      const ac = new AbortController();
      const res = await fetch(`${quick.url}/api/events`, { signal: ac.signal });
      const reader = res.body!.getReader();
      while (comments.length < 2) parser.feed(new TextDecoder().decode((await reader.read()).value));
      ac.abort();
      expect(comments[0].trim()).toBe('heartbeat');
    } finally {
      await quick.close();
    }
  });

  it('refuses clients that do not accept event streams', async () => {
    const res = await fetch(`${s.url}/api/events`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(406);
  });
});

describe('stream cap', () => {
  it('past HERALD_MAX_STREAMS open streams a new one gets 503 with Retry-After; a closed one frees its place', async () => {
    const capped = await testServer({ db, listen: true, maxStreams: 2 });
    const open = (signal?: AbortSignal) => fetch(`${capped.url}/api/events`, { headers: { accept: 'text/event-stream' }, signal });
    const first = new AbortController();
    try {
      const streams = [await open(first.signal), await open()];
      expect(streams.map((r) => r.status)).toEqual([200, 200]);
      const refused = await open();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(await refused.json()).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: expect.stringMatching(/HERALD_MAX_STREAMS/),
        code: 'HERALD_TOO_MANY_STREAMS',
      });
      first.abort();
      await waitFor(() => capped.hub.sessions.size < 2, { what: 'capped.hub.sessions.size < 2' });
      const again = await open();
      expect(again.status).toBe(200);
      await again.body?.cancel();
      await streams[1].body?.cancel();
    } finally {
      await capped.stop();
    }
  });
});

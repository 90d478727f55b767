// A live stream is told, when it starts, what retention had removed by then (the
// Herald-Removed-Through header), so the typed client's onReset means a loss of this stream's own.
// Each test starts its server after a removal of the newest events, so the server's head (where a
// live stream starts) lies behind the retention horizon and a reconnect from there is told of it.
import { afterEach, describe, expect, it } from 'vitest';
import { HeraldClient, type EventStream, type StreamEvent } from '../client/index.ts';
import { formatCursor } from '../queue/cursor.ts';
import { openStream, TOKEN_SPEC, TOKENS, testServer, type TestServer } from './server-support.ts';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer | undefined;
let db: TestDatabase | undefined;
afterEach(async () => {
  await s?.close();
  await db?.drop();
  s = db = undefined;
});

/** A job left queued, then a newer one that ends and is removed; then the server starts. Returns the horizon. */
async function serverAfterRemoval(): Promise<{ server: TestServer; horizon: string }> {
  db = await createTestDatabase();
  await db.queue.enqueue({ kind: 'k', queue: 'waiting' });
  const { job } = await db.queue.enqueue({ kind: 'k', queue: 'gone' });
  await db.queue.cancel(job.id);
  await db.queue.cleanup(0);
  const horizon = formatCursor(await db.queue.retentionHorizon());
  s = await testServer({ db, listen: true, tokens: TOKEN_SPEC });
  return { server: s, horizon };
}

function consume(stream: EventStream): { seen: StreamEvent[]; done: Promise<void> } {
  const seen: StreamEvent[] = [];
  const done = (async () => {
    for await (const e of stream) seen.push(e);
  })();
  return { seen, done };
}

describe('the retention horizon at a live start', () => {
  it('is sent to a live stream only, and only once something was removed', async () => {
    const { server, horizon } = await serverAfterRemoval();
    const live = await openStream(`${server.url}/api/events?token=${TOKENS.viewer}`);
    expect(live.res.headers.get('herald-removed-through')).toBe(horizon);
    // The stream's start lies behind the removal: a resume from there is told of it.
    const start = live.res.headers.get('herald-cursor')!;
    await live.close();
    const resumed = await openStream(`${server.url}/api/events?token=${TOKENS.viewer}`, { 'last-event-id': start });
    await waitFor(() => resumed.messages.length >= 1, { what: 'the reset' });
    expect(resumed.messages[0]).toMatchObject({ event: 'reset', json: { removedThrough: horizon } });
    expect(resumed.res.headers.get('herald-removed-through')).toBeNull();
    await resumed.close();
    const clean = await testServer({ listen: true, tokens: TOKEN_SPEC });
    try {
      const nothingRemoved = await openStream(`${clean.url}/api/events?token=${TOKENS.viewer}`);
      expect(nothingRemoved.res.headers.get('herald-removed-through')).toBeNull();
      await nothingRemoved.close();
    } finally {
      await clean.close();
    }
  });

  it('a live stream started after a removal and reconnected from before it does not call onReset', async () => {
    const { server, horizon } = await serverAfterRemoval();
    const resets: string[] = [];
    const stream = new HeraldClient({ baseUrl: server.url, token: TOKENS.viewer }).events({ onReset: (r) => resets.push(r) });
    const { seen, done } = consume(stream);
    await waitFor(() => stream.lastEventId !== undefined, { what: 'the live start' });
    // Reconnects from its start, behind the removal: the server names it again.
    stream.reconnect();
    await waitFor(() => stream.reconnects === 1, { what: 'the reconnect' });
    // An event after the reconnect comes after the reset it was sent, so the reset was handled.
    const { job } = await server.db.queue.enqueue({ kind: 'k', queue: 'after' });
    await waitFor(() => seen.some((e) => e.jobId === job.id), { what: 'the event after the reconnect' });
    expect(resets).toEqual([]);
    expect(stream.removedThrough).toBe(horizon);
    stream.close();
    await done;
  });

  it('a live stream that received events, then lost some to a removal, calls onReset once on its reconnect', async () => {
    const { server, horizon } = await serverAfterRemoval();
    const q = server.db.queue;
    const resets: string[] = [];
    const stream = new HeraldClient({ baseUrl: server.url, token: TOKENS.viewer }).events({ queue: 'watched', onReset: (r) => resets.push(r) });
    const { seen, done } = consume(stream);
    await waitFor(() => stream.lastEventId !== undefined, { what: 'the live start' });
    // Told again of the removal made before it began: no loss of its own.
    stream.reconnect();
    await waitFor(() => stream.reconnects === 1, { what: 'the first reconnect' });
    const { job: watched } = await q.enqueue({ kind: 'k', queue: 'watched' });
    await waitFor(() => seen.length === 1, { what: 'the watched event' });
    // Events after its cursor that it did not receive (another queue's) end and are removed.
    const { job: other } = await q.enqueue({ kind: 'k', queue: 'other' });
    await q.cancel(other.id);
    await q.cleanup(0);
    const removed = formatCursor(await q.retentionHorizon());
    expect(removed).not.toBe(horizon);
    stream.reconnect();
    await waitFor(() => resets.length === 1, { what: 'onReset after the second reconnect' });
    expect(resets).toEqual([removed]);
    // Told of it again, and then the stream goes on with the watched job's next event.
    stream.reconnect();
    await waitFor(() => stream.reconnects === 3, { what: 'the third reconnect' });
    await q.cancel(watched.id);
    await waitFor(() => seen.length === 2, { what: "the watched job's cancelled event" });
    expect(seen.map((e) => e.type)).toEqual(['enqueued', 'cancelled']);
    expect(resets).toEqual([removed]);
    expect(stream.removedThrough).toBe(removed);
    stream.close();
    await done;
  });
});

// The SSE stream over real HTTP: live start, replay, resume after many dropped connections
// while workers run, filters, bad cursors, and two servers on one database. What a client
// receives is checked against the job_events rows: same events, (tx, id) order, no gap, no repeat.
import http from 'node:http';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createParser } from 'eventsource-parser';
import { HeraldApiError, HeraldClient, type EventStream, type StreamEvent } from '../client/index.ts';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { openStream, simulateWorker, sleep, testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

let db: TestDatabase;
let s: TestServer;
let client: HeraldClient;

beforeAll(async () => {
  db = await createTestDatabase({ backoffBaseMs: 5, backoffMaxMs: 20 });
  s = await testServer({ db, listen: true });
  client = new HeraldClient({ baseUrl: s.url });
});
afterAll(async () => {
  await s.close();
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query('TRUNCATE herald.jobs, herald.job_events RESTART IDENTITY');
});

interface Row {
  id: string;
  job_id: string;
  queue: string;
  type: string;
  status: string;
  attempt: number;
}
async function rows(where = 'true', values: unknown[] = []): Promise<Row[]> {
  const { rows } = await db.pool.query(`SELECT id, job_id, queue, type, status, attempt FROM herald.job_events WHERE ${where} ORDER BY tx, id`, values);
  return rows;
}

const open: EventStream[] = [];
afterEach(() => {
  for (const st of open.splice(0)) st.close();
});

/** Consumes a stream in the background, collecting what it yields; closed after each test. */
function collect(stream: EventStream) {
  open.push(stream);
  const events: StreamEvent[] = [];
  const done = (async () => {
    for await (const e of stream) events.push(e);
  })();
  return { events, done };
}

/** The stream equals the rows: same ids in the same order, and the fields agree. */
function expectSameAsRows(events: StreamEvent[], expected: Row[]) {
  expect(events.map((e) => e.eventId)).toEqual(expected.map((r) => r.id));
  events.forEach((e, i) => {
    const r = expected[i];
    expect({ jobId: e.jobId, queue: e.queue, type: e.type, status: e.status, attempt: e.attempt }).toEqual({
      jobId: r.job_id, queue: r.queue, type: r.type, status: r.status, attempt: r.attempt,
    });
  });
}

/** Mixed work: batches and single jobs on two queues; some fail once, some report progress, some are cancelled. */
async function produce(jobs: number, stop?: AbortSignal): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < jobs && !stop?.aborted; i += 10) {
    const batch = Array.from({ length: 10 }, (_, k) => {
      const n = i + k;
      return {
        kind: n % 3 ? 'echo' : 'work',
        queue: n % 2 ? 'odd' : 'even',
        payload: n % 7 === 0 ? { fail: true } : n % 5 === 0 ? { progress: 50 } : { n },
        maxAttempts: 2,
        runAt: n % 11 === 0 ? new Date(Date.now() + 30) : undefined,
      };
    });
    const made = i % 20 ? await db.queue.enqueueMany(batch) : await Promise.all(batch.map((b) => db.queue.enqueue(b)));
    ids.push(...made.map((m) => m.job.id));
    if (i % 40 === 0) await db.queue.cancel(made[3].job.id).catch(() => {});
    await sleep(2);
  }
  return ids;
}

async function allEnded(): Promise<boolean> {
  const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM herald.jobs WHERE status NOT IN ('succeeded', 'failed', 'cancelled')`);
  return rows[0].n === 0;
}

/** Runs `during` with `workers` in-process workers, until every job has ended; returns the event rows. */
async function workload(workers: number, during: (stop: AbortSignal) => Promise<unknown>): Promise<Row[]> {
  const stop = new AbortController();
  const running = Array.from({ length: workers }, (_, i) => simulateWorker(db.queue, `sim:${i}`, stop.signal));
  try {
    await during(stop.signal);
    await waitFor(allEnded, { what: 'allEnded' });
  } finally {
    stop.abort();
    await Promise.all(running);
  }
  return rows();
}

/** Waits until each collector holds as many events as expected, and a little longer for any extra. */
async function receivedAll(collectors: { events: StreamEvent[] }[], expected: number, settleMs = 100): Promise<void> {
  await waitFor(() => collectors.every((c) => c.events.length >= expected), { what: 'collectors.every((c) => c.events.length >= expected)' });
  await sleep(settleMs);
}

describe('live stream', () => {
  it('starts at the head: only events after the connection, in the contract shape', async () => {
    await db.queue.enqueue({ kind: 'before' });
    const stream = await openStream(`${s.url}/api/events`);
    expect(stream.res.status).toBe(200);
    expect(stream.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.res.headers.get('herald-cursor')).toMatch(/^\d+\.\d+$/);
    // The fetch resolved, so the server has subscribed this client: nothing after this is missed.
    const { job } = await db.queue.enqueue({ kind: 'after', queue: 'q1', payload: { x: 1 } });
    await waitFor(() => stream.messages.length === 1, { what: 'stream.messages.length === 1' });
    await sleep(50);
    expect(stream.messages).toHaveLength(1);
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

describe('deleted history', () => {
  it('a bulk delete writes one deleted event per job and keeps the history; a resume from before what retention removed starts with a reset', async () => {
    const queue = 'gone';
    const [a, b] = await db.queue.enqueueMany([{ kind: 'k', queue }, { kind: 'k', queue }]);
    await db.queue.cancel(a.job.id);
    await db.queue.cancel(b.job.id);
    const before = await openStream(`${s.url}/api/events?lastEventId=0&queue=${queue}`);
    await waitFor(() => before.messages.length === 4, { what: 'before.messages.length === 4' });
    const cursorBefore = before.messages.at(-1)!.id;
    await before.close();
    expect(await db.queue.bulk('delete', { queue })).toMatchObject({ matched: 2, affected: 2 });
    // Every event stays, plus one 'deleted' per job.
    const types = (await rows('queue = $1', [queue])).map((r) => `${r.job_id}:${r.type}`).sort();
    expect(types).toEqual([`${a.job.id}:cancelled`, `${a.job.id}:deleted`, `${a.job.id}:enqueued`, `${b.job.id}:cancelled`, `${b.job.id}:deleted`, `${b.job.id}:enqueued`].sort());
    // Queue history still counts both jobs, whenever the rollup runs. (The server's own rollup may
    // hold its lock, or an open transaction keep the events above the horizon: roll up until done.)
    const enqueuedInHistory = async () => {
      await db.queue.rollupHistory();
      const { rows: stats } = await db.pool.query('SELECT sum(enqueued)::int AS n FROM herald.queue_stats WHERE queue = $1', [queue]);
      return stats[0].n as number | null;
    };
    await waitFor(async () => (await enqueuedInHistory()) !== null, { what: '(await enqueuedInHistory()) !== null' });
    expect(await enqueuedInHistory()).toBe(2);
    // A client resuming after the delete sees both jobs go.
    const resumed = await openStream(`${s.url}/api/events?queue=${queue}`, { 'last-event-id': cursorBefore! });
    await waitFor(() => resumed.messages.length === 2, { what: 'resumed.messages.length === 2' });
    // One deleted event per job; the stream orders each job's own events, not one job against another.
    const deletedSeen = resumed.messages.map((m) => [m.event, m.json?.type, m.json?.jobId]).sort((x, y) => String(x[2]).localeCompare(String(y[2])));
    expect(deletedSeen).toEqual([['job', 'deleted', a.job.id], ['job', 'deleted', b.job.id]].sort((x, y) => x[2].localeCompare(y[2])));
    const after = resumed.messages.at(-1)!.id!;
    await resumed.close();
    // Retention removes the deleted jobs' events: a resume from before that starts with a reset.
    await db.queue.cleanup(0);
    expect(await rows('queue = $1', [queue])).toEqual([]);
    const stale = await openStream(`${s.url}/api/events?queue=${queue}`, { 'last-event-id': cursorBefore! });
    await waitFor(() => stale.messages.length >= 1, { what: 'stale.messages.length >= 1' });
    expect(stale.messages[0]).toMatchObject({ event: 'reset' });
    await stale.close();
    // From at or past the horizon: no reset.
    const fresh = await openStream(`${s.url}/api/events?queue=${queue}`, { 'last-event-id': after });
    const { id } = await db.queue.enqueue({ kind: 'k', queue }).then((r) => r.job);
    await waitFor(() => fresh.messages.some((m) => m.json?.jobId === id), { what: 'fresh.messages.some((m) => m.json?.jobId === id)' });
    expect(fresh.messages.map((m) => m.event)).toEqual(['job']);
    await fresh.close();
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

describe('resume under load', () => {
  it('delivers every event exactly once, in order, across 60 dropped connections while workers run', async () => {
    const stream = client.events({ lastEventId: '0' });
    const { events, done } = collect(stream);
    const expected = await workload(3, async () => {
      const producing = produce(600);
      for (let drops = 0; drops < 60; drops++) {
        await sleep(5 + Math.random() * 30);
        stream.reconnect();
      }
      await producing;
    });
    await receivedAll([{ events }], expected.length);
    expect(stream.reconnects).toBeGreaterThanOrEqual(60);
    expectSameAsRows(events, expected);
    // Each job's events in order, from enqueued to an end.
    const byJob = new Map<string, string[]>();
    for (const e of events) byJob.set(e.jobId, [...(byJob.get(e.jobId) ?? []), e.type]);
    for (const types of byJob.values()) {
      expect(types[0]).toBe('enqueued');
      expect(['succeeded', 'failed', 'cancelled']).toContain(types[types.length - 1]);
    }
    const seen = new Set(events.map((e) => e.type));
    for (const t of ['enqueued', 'claimed', 'progress', 'succeeded', 'retry_scheduled', 'failed', 'cancelled']) expect(seen).toContain(t);
    stream.close();
    await done;
  });

  it('hands over from replay to live without gap or repeat while events keep coming', async () => {
    const streams: ReturnType<typeof collect>[] = [];
    const expected = await workload(2, async (stop) => {
      const producing = produce(400, stop);
      // Clients join at different moments, each replaying from 0 while the tailer moves on.
      for (let i = 0; i < 8; i++) {
        await sleep(20);
        streams.push(collect(client.events({ lastEventId: '0' })));
      }
      await producing;
    });
    await receivedAll(streams, expected.length);
    for (const st of streams) expectSameAsRows(st.events, expected);
  });
});

describe('filters', () => {
  it('?queue= and ?job= give exactly that queue or job, replayed and live', async () => {
    await produce(40);
    const target = (await db.queue.list({ queue: 'odd' })).jobs[0].id;
    const byQueue = collect(client.events({ queue: 'odd', lastEventId: '0' }));
    const byJob = collect(client.events({ job: target, lastEventId: '0' }));
    const both = collect(client.events({ job: target, queue: 'even', lastEventId: '0' }));
    const liveQueue = await openStream(`${s.url}/api/events?queue=odd`);
    await workload(2, () => produce(40));
    const odd = await rows(`queue = 'odd'`);
    const one = await rows('job_id = $1', [target]);
    await waitFor(() => byQueue.events.length >= odd.length && byJob.events.length >= one.length, { what: 'byQueue.events.length >= odd.length && byJob.events.length >= one.length' });
    await sleep(100);
    expectSameAsRows(byQueue.events, odd);
    expectSameAsRows(byJob.events, one);
    expect(both.events).toEqual([]);
    expect(liveQueue.messages.length).toBeGreaterThan(0);
    expect(liveQueue.messages.every((m) => m.json!.queue === 'odd')).toBe(true);
    await liveQueue.close();
  });

  it('rejects malformed filters', async () => {
    expect((await fetch(`${s.url}/api/events?queue=a%20b`)).status).toBe(400);
    expect((await fetch(`${s.url}/api/events?job=abc`)).status).toBe(400);
  });
});

describe('two servers on one database', () => {
  it('send identical streams', async () => {
    const other = await testServer({ db, listen: true });
    try {
      const a = collect(client.events({ lastEventId: '0' }));
      const b = collect(new HeraldClient({ baseUrl: other.url }).events({ lastEventId: '0' }));
      const expected = await workload(3, () => produce(300));
      await receivedAll([a, b], expected.length);
      expect(b.events.map((e) => e.id)).toEqual(a.events.map((e) => e.id));
      expectSameAsRows(a.events, expected);
    } finally {
      await other.close();
    }
  });

  it('let a client switch servers on every reconnect, even to one whose tailer is behind', async () => {
    // The second server hears no NOTIFY and reads only every 300 ms: the cursors the client
    // brings from the first are often ahead of it, so its live buffer holds events to skip.
    const slow = await testServer({ db, listen: true, safetyMs: 300 });
    await slow.hub.listener.close();
    try {
      let n = 0;
      const switching: typeof fetch = (url, init) => fetch((url instanceof Request ? url.url : url.toString()).replace(s.url, n++ % 2 ? slow.url : s.url), init);
      const stream = new HeraldClient({ baseUrl: s.url, fetch: switching }).events({ lastEventId: '0' });
      const { events } = collect(stream);
      const expected = await workload(2, async () => {
        const producing = produce(300);
        while (stream.reconnects < 40) {
          await sleep(10 + Math.random() * 40);
          stream.reconnect();
          await waitFor(() => n > stream.reconnects, { what: 'n > stream.reconnects' });
        }
        await producing;
      });
      await receivedAll([{ events }], expected.length, 400);
      expectSameAsRows(events, expected);
    } finally {
      await slow.close();
    }
  });
});

// Resuming the SSE stream over real HTTP: every event exactly once, in (tx, id) order, across
// dropped connections while workers run, across two servers on one database, and a reset for a
// resume from before what retention removed. What a client receives is checked against the
// job_events rows.
import { describe, expect, it, vi } from 'vitest';
import { HeraldClient } from '../client/index.ts';
import { openStream, sleep, testServer } from './server-support.ts';
import { client, expectSameAsRows, s, useStreamServer } from './support/stream.ts';
import { waitFor } from './support/wait.ts';

const { db, rows, collect, produce, workload, receivedAll } = useStreamServer();

describe('deleted history', () => {
  it('a bulk delete writes one deleted event per job and removes the others; a resume from before what retention removed starts with a reset', async () => {
    const queue = 'gone';
    const [a, b] = await db.queue.enqueueMany([{ kind: 'k', queue }, { kind: 'k', queue }]);
    await db.queue.cancel(a.job.id);
    await db.queue.cancel(b.job.id);
    const before = await openStream(`${s.url}/api/events?lastEventId=0&queue=${queue}`);
    await waitFor(() => before.messages.length === 4, { what: 'before.messages.length === 4' });
    const cursorBefore = before.messages.at(-1)!.id;
    await before.close();
    // Queue history counts what it rolled up before the delete. (The server's own rollup may
    // hold its lock, or an open transaction keep the events above the horizon: roll up until done.)
    const enqueuedInHistory = async () => {
      await db.queue.rollupHistory();
      const { rows: stats } = await db.pool.query('SELECT sum(enqueued)::int AS n FROM herald.queue_stats WHERE queue = $1', [queue]);
      return stats[0].n as number | null;
    };
    await waitFor(async () => (await enqueuedInHistory()) === 2, { what: 'both jobs in queue history' });
    expect(await db.queue.bulk('delete', { queue })).toMatchObject({ matched: 2, affected: 2 });
    // Of their events only one 'deleted' each is left.
    const types = (await rows('queue = $1', [queue])).map((r) => `${r.job_id}:${r.type}`).sort();
    expect(types).toEqual([`${a.job.id}:deleted`, `${b.job.id}:deleted`].sort());
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

  it('hands over from replay to live without gap or repeat: live events come while the replays are held', async () => {
    await produce(40);
    // Each stream's replay stops before its first read until the live events below have been
    // published to every stream's buffer: the hand-over then has live events waiting, always.
    // Caught: a session that starts out live (StreamSession.live = true), writing those events
    // before its replay.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let waiting = 0;
    const feedThrough = s.queue.feedThrough.bind(s.queue);
    const spy = vi.spyOn(s.queue, 'feedThrough').mockImplementation(async (...args) => {
      waiting++;
      await held;
      return feedThrough(...args);
    });
    try {
      const streams = Array.from({ length: 4 }, () => collect(client.events({ lastEventId: '0' })));
      await waitFor(() => waiting === streams.length, { what: 'every replay to be held' });
      const waitingFrom = Math.max(...(await rows()).map((r) => Number(r.id)));
      // Published (to every stream's buffer, in the same call) once the fan-out has had them all.
      const published = new Set<string>();
      s.hub.fanout.observe((events) => events.forEach((e) => published.add(e.eventId)));
      await produce(40);
      const live = await rows();
      await waitFor(() => live.every((r) => published.has(r.id) || Number(r.id) <= waitingFrom), { what: 'the live events to be published' });
      release();
      const expected = await rows();
      const end = expected.at(-1)!.id;
      await waitFor(() => streams.every((st) => st.events.some((e) => e.eventId === end)), { what: 'the last event on every stream' });
      for (const st of streams) expectSameAsRows(st.events, expected);
    } finally {
      release();
      spy.mockRestore();
    }
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

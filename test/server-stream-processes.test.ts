// `herald server` with HERALD_STREAM_PROCESSES=2 (server/cluster.ts): the streams are spread over
// two child processes on one port, and each still gets every event exactly once, in (tx, id)
// order: a resume from before the stream's start replays from the database then joins the live
// events with no gap and no repeat, on whichever child serves it; and when a child is killed
// mid-stream its clients resume with Last-Event-ID on another child and miss nothing.
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeraldClient, type EventStream, type StreamEvent } from '../client/index.ts';
import { useTestDatabase } from './support/db.ts';
import { spawnHerald, type HeraldProcess } from './support/herald-process.ts';
import { lockWaitersReach, pidOf } from './support/lock-waiters.ts';
import { expectSameAsRows } from './support/stream.ts';
import { waitFor } from './support/wait.ts';

const db = useTestDatabase();
let server: HeraldProcess;
let client: HeraldClient;
let url: string;

beforeAll(async () => {
  server = spawnHerald(['server'], { DATABASE_URL: db.url, PORT: '0', HERALD_STREAM_PROCESSES: '2', HERALD_LOG_FORMAT: 'json' });
  const line = await server.waitFor((l) => typeof l.url === 'string' && l.processes === 2, 120_000);
  url = String(line.url);
  client = new HeraldClient({ baseUrl: url });
});
afterAll(() => server?.dispose());

const rows = async (queue: string) =>
  (await db.pool.query('SELECT id, job_id, queue, type, status, attempt FROM herald.job_events WHERE queue = $1 ORDER BY tx, id', [queue])).rows;

const childPids = () => server.lines.filter((l) => l.msg === 'stream process started').map((l) => Number(l.child));

/** Open connections to the server's port, by the pid that holds the server's end (ss, from iproute2); `peer`: only the one from that client port. */
function connectionsByPid(peer?: number): Map<number, number> {
  const port = new URL(url).port;
  const out = execFileSync('ss', ['-tnpH', 'state', 'established', `( sport = :${port}${peer ? ` and dport = :${peer}` : ''} )`], { encoding: 'utf8' });
  const counts = new Map<number, number>();
  for (const m of out.matchAll(/pid=(\d+)/g)) counts.set(Number(m[1]), (counts.get(Number(m[1])) ?? 0) + 1);
  return counts;
}

/**
 * Streams of one queue, each from the beginning, opened one after the other: at least four, and
 * until both children serve some (the kernel hands each connection to the child it wakes).
 * `holder`: a session holding herald.retention_horizon, which each stream reads after it
 * subscribed and before its replay: a stream is then connected once it waits for that session.
 */
async function openStreams(queue: string, holder?: number) {
  // An earlier test's streams have let go of their connections, so the counts are this test's.
  await waitFor(() => connectionsByPid().size === 0, { what: 'no connection left from before' });
  const streams: { stream: EventStream; events: StreamEvent[] }[] = [];
  const bothServe = () => childPids().filter((pid) => (connectionsByPid().get(pid) ?? 0) > 0).length >= 2;
  while (streams.length < 4 || !bothServe()) {
    expect(streams.length).toBeLessThan(40);
    const stream = client.events({ queue, lastEventId: '0' });
    const events: StreamEvent[] = [];
    void (async () => {
      for await (const e of stream) events.push(e);
    })();
    streams.push({ stream, events });
    // Connected (it has replayed the first event, or waits to) before the next one connects.
    if (holder) await lockWaitersReach(db.pool, { waiter: { app: 'herald:server' }, holder, count: streams.length });
    else await waitFor(() => events.length > 0, { what: `stream ${streams.length} connected` });
  }
  return streams;
}

/** Each child's count of events its tailer has read and published (herald_stream_events_total), by pid. */
async function eventsPublishedByEachChild(): Promise<Map<number, number>> {
  const read = new Map<number, number>();
  // A keep-alive connection stays with the child that accepted it: try connections until each
  // child has one (the kernel picks), and ss names the child.
  for (let tries = 0; read.size < childPids().length; tries++) {
    expect(tries).toBeLessThan(200);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const { text, localPort } = await new Promise<{ text: string; localPort: number }>((resolve, reject) => {
      http.get(`${url}/metrics`, { agent }, (res) => {
        const localPort = res.socket.localPort!;
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ text, localPort }));
      }).on('error', reject);
    });
    const [pid] = [...connectionsByPid(localPort).keys()];
    agent.destroy();
    const events = Number(/^herald_stream_events_total (\d+)$/m.exec(text)?.[1]);
    if (pid !== undefined && !read.has(pid)) read.set(pid, events);
  }
  return read;
}

const enqueue = (queue: string, n: number) => db.queue.enqueueMany(Array.from({ length: n }, (_, i) => ({ kind: 'k', queue, payload: { i } })));

describe('HERALD_STREAM_PROCESSES=2', () => {
  it('runs two children; streams on each replay from the database, then join the live events with no gap and no repeat', async () => {
    expect(childPids()).toHaveLength(2);
    const queue = 'spread';
    await enqueue(queue, 20);
    // The hand-over is forced: each stream's replay ends at the tailer's position when it
    // subscribed, and finds the live events already in its buffer. An open transaction (its id
    // assigned) keeps the tailers below it while those events commit after it; then a lock on
    // the retention horizon, which each stream reads after subscribing and before its replay,
    // holds the replays (that lock takes a transaction id too, after the events': it does not
    // hold the tailers back from them); then the first transaction ends, and the tailers publish
    // the events to every stream's buffer before the replays may start.
    // Caught: a session that starts out live (StreamSession.live = true) writes them first.
    const tailers = await db.pool.connect();
    const replays = await db.pool.connect();
    try {
      await tailers.query('BEGIN');
      await tailers.query('SELECT pg_current_xact_id()');
      await enqueue(queue, 20);
      const made = await enqueue(queue, 10);
      await db.queue.cancel(made[0].job.id);
      const expected = await rows(queue);
      expect(expected).toHaveLength(51);
      await replays.query('BEGIN');
      await replays.query('LOCK TABLE herald.retention_horizon IN ACCESS EXCLUSIVE MODE');
      const streams = await openStreams(queue, await pidOf(replays));
      await tailers.query('COMMIT');
      const { rows: [{ total }] } = await db.pool.query<{ total: number }>('SELECT count(*)::int AS total FROM herald.job_events');
      await waitFor(async () => [...(await eventsPublishedByEachChild()).values()].every((n) => n >= total), {
        what: "each child's tailer to publish the live events",
      });
      // Still held: no stream has had an event yet.
      expect(streams.map((s) => s.events.length)).toEqual(streams.map(() => 0));
      await replays.query('COMMIT');
      await waitFor(() => streams.every((s) => s.events.length >= expected.length), { what: 'every stream has every event' });
      for (const s of streams) {
        expectSameAsRows(s.events, expected);
        s.stream.close();
      }
    } finally {
      for (const c of [tailers, replays]) {
        await c.query('ROLLBACK').catch(() => {});
        c.release();
      }
    }
  });

  it('a child killed mid-stream: its clients resume with Last-Event-ID on the other child and miss nothing; a new child takes its place', async () => {
    const queue = 'killed';
    await enqueue(queue, 10);
    const streams = await openStreams(queue);
    await waitFor(() => streams.every((s) => s.events.length === 10), { what: 'the first batch everywhere' });
    // The streams are spread as the kernel wakes the children: kill the one that serves the most.
    const served = connectionsByPid();
    const victim = childPids().sort((a, b) => (served.get(b) ?? 0) - (served.get(a) ?? 0))[0];
    expect(served.get(victim)).toBeGreaterThan(0);
    process.kill(victim, 'SIGKILL');
    // Events while the victim's clients are cut off and reconnecting.
    for (let i = 0; i < 5; i++) await enqueue(queue, 4);
    await waitFor(() => childPids().length === 3, { what: 'a third child started' });
    await enqueue(queue, 10);
    const expected = await rows(queue);
    expect(expected).toHaveLength(40);
    await waitFor(() => streams.every((s) => s.events.length >= expected.length), { what: 'every stream has every event' });
    // Streams of the killed child reconnected, and no more than it held: ss counts every open
    // connection to it, a client's idle keep-alive one too, so its count is an upper bound.
    const reconnected = streams.filter((s) => s.stream.reconnects > 0).length;
    expect(reconnected).toBeGreaterThan(0);
    expect(reconnected).toBeLessThanOrEqual(served.get(victim)!);
    for (const s of streams) {
      expectSameAsRows(s.events, expected);
      s.stream.close();
    }
  });
});

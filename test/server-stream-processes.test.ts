// `herald server` with HERALD_STREAM_PROCESSES=2 (server/cluster.ts): the streams are spread over
// two child processes on one port, and each still gets every event exactly once, in (tx, id)
// order: a resume from before the stream's start replays from the database then joins the live
// events with no gap and no repeat, on whichever child serves it; and when a child is killed
// mid-stream its clients resume with Last-Event-ID on another child and miss nothing.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeraldClient, type EventStream, type StreamEvent } from '../client/index.ts';
import { useTestDatabase } from './support/db.ts';
import { spawnHerald, type HeraldProcess } from './support/herald-process.ts';
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

/** Open connections to the server's port, by the pid that holds the server's end (ss, from iproute2). */
function connectionsByPid(): Map<number, number> {
  const port = new URL(url).port;
  const out = execFileSync('ss', ['-tnpH', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' });
  const counts = new Map<number, number>();
  for (const m of out.matchAll(/pid=(\d+)/g)) counts.set(Number(m[1]), (counts.get(Number(m[1])) ?? 0) + 1);
  return counts;
}

/**
 * Streams of one queue, each from the beginning, opened one after the other: at least four, and
 * until both children serve some (the kernel hands each connection to the child it wakes).
 */
async function openStreams(queue: string) {
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
    // Connected (it has replayed the first event) before the next one connects.
    await waitFor(() => events.length > 0, { what: `stream ${streams.length} connected` });
  }
  return streams;
}

const enqueue = (queue: string, n: number) => db.queue.enqueueMany(Array.from({ length: n }, (_, i) => ({ kind: 'k', queue, payload: { i } })));

describe('HERALD_STREAM_PROCESSES=2', () => {
  it('runs two children; streams on each replay from the database, then join the live events with no gap and no repeat', async () => {
    expect(childPids()).toHaveLength(2);
    const queue = 'spread';
    await enqueue(queue, 20);
    const streams = await openStreams(queue);
    // Live events while the replays may still run, then more.
    await enqueue(queue, 20);
    const made = await enqueue(queue, 10);
    await db.queue.cancel(made[0].job.id);
    const expected = await rows(queue);
    expect(expected).toHaveLength(51);
    await waitFor(() => streams.every((s) => s.events.length >= expected.length), { what: 'every stream has every event' });
    for (const s of streams) {
      expectSameAsRows(s.events, expected);
      s.stream.close();
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

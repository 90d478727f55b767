// A stream that opens after a spell with none open. Meanwhile the server's tailer was idle (ticks
// start no read, and its safety read is a minute away here), so the first stream finds it behind
// by everything enqueued since the last one closed. That stream still gets exactly the events
// after its start, live only or resuming: none missed, none twice, in feed order.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStream, testServer, type TestServer } from './server-support.ts';
import { useTestDatabase } from './support/db.ts';
import { lockWaitersReach, pidOf } from './support/lock-waiters.ts';
import { waitFor } from './support/wait.ts';

const db = useTestDatabase();
let s: TestServer;

beforeAll(async () => {
  s = await testServer({ db, listen: true, safetyMs: 60_000 });
});
afterAll(() => s.close());

type Stream = Awaited<ReturnType<typeof openStream>>;

/** The ids of the stored events after `cursor`, in feed order: what a stream from there must get. */
async function idsAfter(cursor: string): Promise<string[]> {
  const [tx, id] = cursor.split('.');
  const { rows } = await db.pool.query<{ id: string }>(
    // Ordered by the columns: a bare `id` here would be the text it is selected as, and sort 100
    // before 99 within one transaction.
    'SELECT e.id::text AS id FROM herald.job_events e WHERE (e.tx, e.id) > ($1::xid8, $2::bigint) ORDER BY e.tx, e.id',
    [tx, id],
  );
  return rows.map((r) => r.id);
}

const received = (stream: Stream) => stream.messages.map((m) => m.json?.eventId);

/** Single enqueues at once (they share statements), a batch, and a cancel. */
async function work(kind: string): Promise<void> {
  await Promise.all(Array.from({ length: 10 }, (_, i) => db.queue.enqueue({ kind, payload: { i } })));
  const batch = await db.queue.enqueueMany(Array.from({ length: 10 }, () => ({ kind })));
  await db.queue.cancel(batch[0].job.id);
}

/** Enqueues one more job and waits for the stream to have it: in feed order, it then holds all before it. */
async function throughSentinel(stream: Stream): Promise<void> {
  const { job } = await db.queue.enqueue({ kind: 'sentinel' });
  await waitFor(() => stream.messages.some((m) => m.json?.jobId === job.id), { what: "the sentinel job's event" });
}

/**
 * Opens a stream (resuming from `after`, or live only), works while it is open, and checks that it
 * got exactly the stored events after its start. Closes it and returns its last event's cursor
 * once no stream follows the server's fan-out.
 */
async function streamGetsExactly(kind: string, after?: string): Promise<string> {
  const stream = await openStream(`${s.url}/api/events`, after === undefined ? {} : { 'last-event-id': after });
  const start = after ?? stream.res.headers.get('herald-cursor')!;
  await work(kind);
  await throughSentinel(stream);
  expect(received(stream)).toEqual(await idsAfter(start));
  await stream.close();
  await waitFor(() => !s.hub.fanout.listening, { what: 'no stream open on the server' });
  return stream.messages.at(-1)!.id!;
}

it('the first stream after a spell with none open gets exactly its events: resuming, then live only', async () => {
  await work('before');
  const last = await streamGetsExactly('watched');

  // Nobody watches: the tailer falls behind. A stream resuming from the first one's last event
  // replays what came meanwhile, then goes on live.
  await work('unwatched');
  await streamGetsExactly('resumed', last);

  // Again nobody watches; a live-only stream gets what comes after its start and nothing before.
  await work('unwatched-again');
  await streamGetsExactly('live');
});

it('a stream waiting for the idle tailer to catch up holds its place under HERALD_MAX_STREAMS', async () => {
  const capped = await testServer({ db, listen: true, safetyMs: 60_000, maxStreams: 1 });
  // The catch-up read waits behind a lock on the log, so the first stream is still opening when
  // the second asks.
  const lock = await db.pool.connect();
  const first = new AbortController();
  try {
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE herald.job_events IN ACCESS EXCLUSIVE MODE');
    const opening = fetch(`${capped.url}/api/events`, { headers: { accept: 'text/event-stream' }, signal: first.signal });
    await lockWaitersReach(db.pool, { waiter: { app: 'herald:server' }, holder: await pidOf(lock) });
    const refused = await fetch(`${capped.url}/api/events`, { headers: { accept: 'text/event-stream' } });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { code: string }).code).toBe('HERALD_TOO_MANY_STREAMS');
    await lock.query('ROLLBACK');
    expect((await opening).status).toBe(200);
  } finally {
    await lock.query('ROLLBACK').catch(() => {});
    lock.release();
    first.abort();
    await capped.stop();
  }
});

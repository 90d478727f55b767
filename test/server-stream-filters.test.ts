// The SSE stream's filters over real HTTP: ?queue= and ?job= give exactly the events of that
// queue or job, replayed and live, checked against the job_events rows; malformed ones are a 400.
import { describe, expect, it } from 'vitest';
import { openStream } from './server-support.ts';
import { client, expectSameAsRows, s, useStreamServer } from './support/stream.ts';
import { waitFor } from './support/wait.ts';

const { db, rows, collect, produce, workload } = useStreamServer();

describe('filters', () => {
  it('?queue= and ?job= give exactly that queue or job, replayed and live', async () => {
    await produce(40);
    // A job that fails for good (produce's payload for n = 7): retried at the end, its event is
    // the last of all, and of its queue and job. Once a stream has it, it has had everything
    // before it: an extra event would have come first (no sleep to wait for one).
    const { rows: [{ id: target }] } = await db.pool.query(`SELECT id::text FROM herald.jobs WHERE queue = 'odd' AND payload ? 'fail' ORDER BY id LIMIT 1`);
    const byQueue = collect(client.events({ queue: 'odd', lastEventId: '0' }));
    const byJob = collect(client.events({ job: target, lastEventId: '0' }));
    // Both filters at once: events that match each (the job's), not either. (That a job's events
    // in another queue's filter are kept out is the session's own check: session.test.ts.)
    const both = collect(client.events({ job: target, queue: 'odd', lastEventId: '0' }));
    const liveQueue = await openStream(`${s.url}/api/events?queue=odd`);
    await workload(2, () => produce(40));
    expect((await db.queue.get(target))!.status).toBe('failed');
    await db.queue.retry(target);
    const odd = await rows(`queue = 'odd'`);
    const one = await rows('job_id = $1', [target]);
    const marker = one.at(-1)!.id;
    expect(odd.at(-1)!.id).toBe(marker);
    const has = (c: { events: { eventId: string }[] }) => c.events.some((e) => e.eventId === marker);
    await waitFor(() => has(byQueue) && has(byJob) && has(both), { what: 'the last event (the retry) on every stream' });
    expectSameAsRows(byQueue.events, odd);
    expectSameAsRows(byJob.events, one);
    expectSameAsRows(both.events, one);
    expect(liveQueue.messages.length).toBeGreaterThan(0);
    expect(liveQueue.messages.every((m) => m.json!.queue === 'odd')).toBe(true);
    await liveQueue.close();
  });

  it('rejects malformed filters', async () => {
    expect((await fetch(`${s.url}/api/events?queue=a%20b`)).status).toBe(400);
    expect((await fetch(`${s.url}/api/events?job=abc`)).status).toBe(400);
  });
});

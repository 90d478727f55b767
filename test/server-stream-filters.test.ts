// The SSE stream's filters over real HTTP: ?queue= and ?job= give exactly the events of that
// queue or job, replayed and live, checked against the job_events rows; malformed ones are a 400.
import { describe, expect, it } from 'vitest';
import { openStream, sleep } from './server-support.ts';
import { client, expectSameAsRows, s, useStreamServer } from './support/stream.ts';
import { waitFor } from './support/wait.ts';

const { db, rows, collect, produce, workload } = useStreamServer();

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

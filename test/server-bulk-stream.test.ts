// A bulk action of 20,000 jobs works in transactions of at most 1,000, so an SSE client keeps
// receiving events while it runs, instead of all of them after one long transaction ends.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStream, testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer({ listen: true });
});
afterAll(() => s.close());

const N = 20_000;

it('streams the events of a 20,000-job bulk cancel while the action is still running', async () => {
  for (let i = 0; i < N; i += 1000) {
    await s.queue.enqueueMany(Array.from({ length: 1000 }, () => ({ kind: 'k', queue: 'bulk' })));
  }
  const stream = await openStream(`${s.url}/api/events?queue=bulk`);
  const cancelled = () => stream.messages.filter((m) => m.json?.type === 'cancelled');

  let seenWhenDone = -1;
  const response = fetch(`${s.url}/api/jobs/bulk`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'cancel', filter: { queue: 'bulk' } }),
  }).then(async (res) => {
    seenWhenDone = cancelled().length;
    return { status: res.status, body: await res.json() };
  });

  await waitFor(() => cancelled().length === N, { what: 'cancelled().length === N' });
  expect(await response).toEqual({ status: 200, body: { matched: N, affected: N } });
  // Events arrived before the bulk call returned: its first batches had committed and
  // streamed while later ones were still to come.
  expect(seenWhenDone).toBeGreaterThan(0);

  // The cursor (TX.ID) names each event's transaction: 20 of them, none over 1,000 jobs.
  const perTx = new Map<string, number>();
  for (const m of cancelled()) perTx.set(m.id!.split('.')[0], (perTx.get(m.id!.split('.')[0]) ?? 0) + 1);
  expect(Math.max(...perTx.values())).toBeLessThanOrEqual(1000);
  expect(perTx.size).toBe(N / 1000);
  expect(new Set(cancelled().map((m) => m.json?.jobId)).size).toBe(N);
  await stream.close();
}, 180_000);

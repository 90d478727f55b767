// GET /api/events/recent: the newest events the stream has published, newest first, which the
// board's Overview shows after a reload before live ones come. Replies are checked against the
// OpenAPI document by testServer.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testServer, type TestServer } from './server-support.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer();
});
afterAll(() => s.close());

const get = (url: string) => s.app.inject({ method: 'GET', url });

it('lists the newest published events, newest first, up to ?limit, of one ?queue', async () => {
  const ids: string[] = [];
  for (const queue of ['a', 'b', 'a', 'a', 'b']) ids.push((await s.queue.enqueue({ kind: 'k', queue })).job.id);
  // Listed once the tailer has published them (another database's open transaction can hold it back a while).
  const all = await waitFor(async () => {
    const events = (await get('/api/events/recent')).json().events as { jobId: string; queue: string; type: string }[];
    return events.length === ids.length && events;
  }, { what: 'the five enqueued events to be published' });
  expect(all.map((e) => e.jobId)).toEqual([...ids].reverse());
  expect(all.every((e) => e.type === 'enqueued')).toBe(true);

  const two = (await get('/api/events/recent?limit=2')).json().events as { jobId: string }[];
  expect(two.map((e) => e.jobId)).toEqual([ids[4], ids[3]]);

  const a = (await get('/api/events/recent?queue=a')).json().events as { jobId: string; queue: string }[];
  expect(a.map((e) => e.jobId)).toEqual([ids[3], ids[2], ids[0]]);
});

it('refuses a bad limit or queue with a 400 naming the rule', async () => {
  for (const q of ['limit=0', 'limit=101', 'limit=x', 'queue=no%20spaces', 'since=1']) {
    const r = await get(`/api/events/recent?${q}`);
    expect(r.statusCode, q).toBe(400);
    expect(r.json().code, q).toBe('HERALD_VALIDATION');
  }
  expect((await get('/api/events/recent?limit=0')).json().message).toMatch(/^limit must be an integer from 1 to .* 100 for the recent events/);
});

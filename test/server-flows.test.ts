// The workflow routes through fastify.inject on a real database: creating, reading, cancelling
// and retrying flows, dependsOn on the enqueue routes, the flow filter of search, bulk and the
// stream, every rejection (400 naming the problem, nothing written), and gather in a real worker.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openStream, testServer, type TestServer } from './server-support.ts';
import { Worker } from '../worker/worker.ts';
import { waitFor } from './support/wait.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer({ listen: true });
});
afterAll(() => s.close());
beforeEach(async () => {
  await s.db.pool.query('TRUNCATE herald.jobs, herald.job_events, herald.job_edges, herald.flows RESTART IDENTITY');
});

const post = (url: string, payload?: unknown) => s.app.inject({ method: 'POST', url, payload: payload as object });
const get = (url: string) => s.app.inject({ method: 'GET', url });
const counts = async () =>
  (await s.db.pool.query('SELECT (SELECT count(*) FROM herald.jobs)::int AS jobs, (SELECT count(*) FROM herald.flows)::int AS flows')).rows[0];

async function rejected(res: Awaited<ReturnType<typeof get>>, status: 400 | 404, text: RegExp) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json()).toEqual({
    statusCode: status, error: expect.any(String), message: expect.stringMatching(text),
    code: status === 400 ? 'HERALD_VALIDATION' : 'HERALD_NOT_FOUND',
  });
}

const pipeline = {
  name: 'etl',
  jobs: [
    { ref: 'merge', kind: 'gather', dependsOn: ['t1', 't2'] },
    { ref: 't1', kind: 'echo', payload: { part: 1 }, dependsOn: ['fetch'] },
    { ref: 't2', kind: 'echo', payload: { part: 2 }, dependsOn: ['fetch'], onParentFailure: 'run' },
    { ref: 'fetch', kind: 'echo', payload: { url: 'x' } },
  ],
};

describe('POST /api/flows', () => {
  it('creates the jobs in request order with refs, flowId, dependsOn and blocked status', async () => {
    const res = await post('/api/flows', pipeline);
    expect(res.statusCode, res.body).toBe(201);
    const { flow, jobs } = res.json();
    expect(flow).toMatchObject({ id: '1', name: 'etl', status: 'running', finishedAt: null, counts: { queued: 1, blocked: 3, running: 0 } });
    expect(jobs.map((j: { ref: string }) => j.ref)).toEqual(['merge', 't1', 't2', 'fetch']);
    const [merge, t1, t2, fetch] = jobs;
    expect(fetch).toMatchObject({ status: 'queued', flowId: '1', dependsOn: [], onParentFailure: null });
    expect(merge).toMatchObject({ status: 'blocked', waitingFor: 'dependencies', dependsOn: [t1.id, t2.id], onParentFailure: 'cancel' });
    expect(t2.onParentFailure).toBe('run');

    const detail = (await get('/api/flows/1')).json();
    expect(detail.flow).toEqual(flow);
    expect(detail.jobs).toHaveLength(4);
    expect(detail.edges).toEqual(expect.arrayContaining([[fetch.id, t1.id], [fetch.id, t2.id], [t1.id, merge.id], [t2.id, merge.id]]));
    expect((await get('/api/flows')).json()).toMatchObject({ flows: [{ id: '1', name: 'etl' }], next: null });
    expect((await get('/api/flows?status=succeeded')).json()).toEqual({ flows: [], next: null });
    expect((await get(`/api/jobs?flow=1&status=blocked`)).json().jobs).toHaveLength(3);
    expect((await get(`/api/jobs/${merge.id}/dependencies`)).json()).toEqual({
      parents: [
        { id: t1.id, ref: 't1', kind: 'echo', status: 'blocked' },
        { id: t2.id, ref: 't2', kind: 'echo', status: 'blocked' },
      ],
      children: [],
    });
  });

  it('refuses duplicate refs, unknown refs, cycles and bad fields with a 400 naming them, writing nothing', async () => {
    const job = (ref: string, dependsOn?: string[]) => ({ ref, kind: 'k', ...(dependsOn ? { dependsOn } : {}) });
    await rejected(await post('/api/flows', { jobs: [job('a'), job('a')] }), 400, /duplicate ref "a"/);
    await rejected(await post('/api/flows', { jobs: [job('a', ['ghost'])] }), 400, /unknown ref "ghost" in the dependsOn of "a"/);
    await rejected(await post('/api/flows', { jobs: [job('a', ['b']), job('b', ['a'])] }), 400, /cycle: (a → b → a|b → a → b)/);
    await rejected(await post('/api/flows', { jobs: [{ kind: 'k' }] }), 400, /jobs\[0\]\.ref is required/);
    await rejected(await post('/api/flows', { jobs: [{ ...job('a'), onParentFailure: 'maybe' }] }), 400, /onParentFailure/);
    await rejected(await post('/api/flows', { jobs: [] }), 400, /jobs/);
    await rejected(await post('/api/flows', { jobs: Array.from({ length: 1001 }, (_, i) => job(`j${i}`)) }), 400, /jobs/);
    await rejected(await post('/api/flows', { jobs: [job('a'), { ...job('b'), kind: 'bad kind' }] }), 400, /kind/);
    // 150 jobs, each waiting for every earlier one: 11,175 edges, past the cap of 10,000. Mutation
    // caught: checkEdges's `if (edges > MAX_FLOW_EDGES)` made `if (false)` (the flow is created).
    const dense = Array.from({ length: 150 }, (_, i) => job(`j${i}`, Array.from({ length: i }, (_, k) => `j${k}`)));
    await rejected(await post('/api/flows', { jobs: dense }), 400, /dependsOn names 11175 parents in all; a request may carry at most 10000/);
    expect(await counts()).toEqual({ jobs: 0, flows: 0 });
    await rejected(await get('/api/flows/77'), 404, /flow 77 does not exist/);
    await rejected(await post('/api/flows/77/cancel'), 404, /flow 77 does not exist/);
    await rejected(await get('/api/flows/abc'), 400, /id/);
  });

  it('takes a name as people write it, and refuses one with a control character or a space at an end, by the rule', async () => {
    for (const name of ['order 42', 'Rechnung Müller #7', 'x'.repeat(128)]) {
      const res = await post('/api/flows', { name, jobs: [{ ref: 'a', kind: 'k' }] });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().flow.name).toBe(name);
    }
    const before = await counts();
    for (const name of ['', ' order 42', 'order 42 ', 'tab\there', 'x'.repeat(129)]) {
      await rejected(await post('/api/flows', { name, jobs: [{ ref: 'a', kind: 'k' }] }), 400,
        /^name must be 1-128 characters, without control characters, neither starting nor ending with a space$/);
    }
    expect(await counts()).toEqual(before);
    // The table's check says the same to a writer that skips the HTTP schema.
    await expect(s.queue.createFlow('line\nbreak', [{ ref: 'a', job: { kind: 'k' } }])).rejects.toThrow(/^name must be 1-128 characters, without control characters/);
  });
});

describe('dependsOn on the enqueue routes', () => {
  it('blocks a job on existing ones; an unknown id is a 400 and the batch writes nothing', async () => {
    const parent = (await post('/api/jobs', { kind: 'p' })).json();
    const child = await post('/api/jobs', { kind: 'c', dependsOn: [parent.id], onParentFailure: 'run' });
    expect(child.statusCode, child.body).toBe(201);
    expect(child.json()).toMatchObject({ status: 'blocked', dependsOn: [parent.id], onParentFailure: 'run', flowId: null });
    await rejected(await post('/api/jobs', { kind: 'c', dependsOn: ['424242'] }), 400, /dependsOn names job 424242 that does not exist/);
    await rejected(await post('/api/jobs', { kind: 'c', dependsOn: ['x1'] }), 400, /dependsOn/);
    const before = await counts();
    await rejected(await post('/api/jobs/batch', { jobs: [{ kind: 'ok' }, { kind: 'c', dependsOn: ['424242'] }] }), 400, /424242/);
    const wide = Array.from({ length: 11 }, () => ({ kind: 'c', dependsOn: Array.from({ length: 1000 }, (_, i) => String(i + 1)) }));
    await rejected(await post('/api/jobs/batch', { jobs: wide }), 400, /dependsOn names 11000 parents in all; a request may carry at most 10000/);
    expect(await counts()).toEqual(before);
    const batch = await post('/api/jobs/batch', { jobs: [{ kind: 'ok' }, { kind: 'c', dependsOn: [parent.id] }] });
    expect(batch.statusCode).toBe(201);
    expect(batch.json().jobs.map((j: { status: string }) => j.status)).toEqual(['queued', 'blocked']);
    expect((await get(`/api/jobs/${parent.id}/dependencies`)).json().children.map((c: { id: string }) => c.id)).toEqual([child.json().id, batch.json().jobs[1].id]);
  });
});

describe('flow actions and filters', () => {
  it('cancel and retry over HTTP; bulk and the stream take the flow filter', async () => {
    const other = await post('/api/flows', { jobs: [{ ref: 'x', kind: 'x' }] });
    const { flow, jobs } = (await post('/api/flows', pipeline)).json();
    const stream = await openStream(`${s.url}/api/events?flow=${flow.id}&lastEventId=0`);
    try {
      expect((await post(`/api/flows/${flow.id}/cancel`)).json()).toEqual({ affected: 4 });
      expect((await get(`/api/flows/${flow.id}`)).json().flow).toMatchObject({ status: 'failed', counts: { cancelled: 4 } });
      expect((await get(`/api/flows/${other.json().flow.id}`)).json().flow.status).toBe('running');
      expect((await post(`/api/flows/${flow.id}/retry`)).json()).toEqual({ affected: 4 });
      const after = (await get(`/api/flows/${flow.id}`)).json();
      expect(after.flow).toMatchObject({ status: 'running', counts: { queued: 1, blocked: 3 } });
      const bulk = await post('/api/jobs/bulk', { action: 'cancel', filter: { flow: flow.id }, dryRun: true });
      expect(bulk.json()).toEqual({ matched: 4, affected: 4 });
      // Every event the stream sends is of this flow: 4 enqueued, 4 cancelled, 4 retried.
      await waitFor(() => stream.messages.filter((m) => m.json).length >= 12, { what: 'stream.messages.filter((m) => m.json).length >= 12' });
      const sent = stream.messages.filter((m) => m.json).map((m) => m.json!);
      expect(new Set(sent.map((e) => e.flowId))).toEqual(new Set([flow.id]));
      expect(sent.filter((e) => e.type === 'cancelled')).toHaveLength(4);
      expect(new Set(sent.map((e) => e.jobId))).toEqual(new Set(jobs.map((j: { id: string }) => j.id)));
    } finally {
      await stream.close();
    }
  });

  it('runs a fan-out/fan-in in a real worker: gather gets the parents results in dependsOn order', async () => {
    const w = new Worker({ databaseUrl: s.db.url, concurrency: 4, pollMs: 60_000 });
    await w.start();
    try {
      const { flow, jobs } = (await post('/api/flows', pipeline)).json();
      await waitFor(async () => (await get(`/api/flows/${flow.id}`)).json().flow.status !== 'running', { what: 'the flow to finish' });
      const detail = (await get(`/api/flows/${flow.id}`)).json();
      expect(detail.flow).toMatchObject({ status: 'succeeded', counts: { succeeded: 4 } });
      expect(detail.flow.finishedAt).not.toBeNull();
      const merge = (await get(`/api/jobs/${jobs[0].id}`)).json();
      expect(merge.result).toEqual({ parents: [{ ref: 't1', result: { part: 1 } }, { ref: 't2', result: { part: 2 } }] });
      const events = (await get(`/api/jobs/${merge.id}/events`)).json().events;
      expect(events.map((e: { type: string }) => e.type)).toEqual(['enqueued', 'unblocked', 'claimed', 'succeeded']);
      expect(events.every((e: { flowId: string }) => e.flowId === flow.id)).toBe(true);
    } finally {
      await w.stop();
    }
  });

  it("runs the README's example pipeline (examples/pipeline): split, three counts in parallel, merge", async () => {
    const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'examples', 'pipeline');
    const w = new Worker({ databaseUrl: s.db.url, concurrency: 4, pollMs: 60_000, tasksDir: path.join(dir, 'tasks') });
    await w.start();
    try {
      const res = await post('/api/flows', JSON.parse(fs.readFileSync(path.join(dir, 'flow.json'), 'utf8')));
      expect(res.statusCode, res.body).toBe(201);
      const { flow, jobs } = res.json();
      await waitFor(async () => (await get(`/api/flows/${flow.id}`)).json().flow.status !== 'running', { what: 'the flow to finish' });
      expect((await get(`/api/flows/${flow.id}`)).json().flow.status).toBe('succeeded');
      expect((await get(`/api/jobs/${jobs[4].id}`)).json().result).toEqual({ parts: 3, top: [['the', 3], ['cat', 1], ['end', 1]] });
    } finally {
      await w.stop();
    }
  });
});

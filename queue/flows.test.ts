// Workflows in the core against real PostgreSQL: creating flows, unblocking in the finishing
// transaction, failure rules, dependencies on existing jobs, cancel, retry and deletion.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { ValidationError } from './errors.ts';
import type { Job } from './job.ts';

const db = useTestDatabase({ backoffBaseMs: 1000, backoffMaxMs: 60_000 }, { truncate: ['herald.jobs', 'herald.job_events', 'herald.job_edges', 'herald.flows'] });
const q = db.queue;

const W = 'host:1:flow';
const types = async (id: string) => (await q.events(id)).map((e) => e.type);
const status = async (id: string) => (await q.get(id))!.status;

/** Claims the jobs of `kind` and ends each as `ok` says. */
async function run(kind: string, ok = true): Promise<void> {
  for (;;) {
    const jobs = await q.claim({ worker: W, kinds: [kind], limit: 500 });
    if (jobs.length === 0) return;
    if (ok) await q.complete(W, jobs.map((j) => ({ id: j.id, attempt: j.attempt, result: { from: j.kind } })));
    else await q.fail(W, jobs.map((j) => ({ id: j.id, attempt: j.attempt, error: new Error(`${j.kind} broke`), final: true })));
  }
}

const byRef = (jobs: Job[]) => Object.fromEntries(jobs.map((j) => [j.ref!, j]));

describe('creating a flow', () => {
  it('inserts parents first (smaller ids), returns jobs in request order, blocks the ones with parents', async () => {
    const { flow, jobs } = await q.createFlow('etl', [
      { ref: 'merge', dependsOn: ['a', 'b'], job: { kind: 'merge' } },
      { ref: 'a', dependsOn: ['fetch'], job: { kind: 'transform' } },
      { ref: 'b', dependsOn: ['fetch'], onParentFailure: 'run', job: { kind: 'transform' } },
      { ref: 'fetch', job: { kind: 'fetch', payload: { url: 'x' } } },
    ]);
    expect(jobs.map((j) => j.ref)).toEqual(['merge', 'a', 'b', 'fetch']);
    const j = byRef(jobs);
    expect(BigInt(j.fetch.id)).toBeLessThan(BigInt(j.a.id));
    expect(BigInt(j.b.id)).toBeLessThan(BigInt(j.merge.id));
    expect(j.fetch).toMatchObject({ status: 'queued', flowId: flow.id, dependsOn: [], onParentFailure: null });
    expect(j.merge).toMatchObject({ status: 'blocked', waitingFor: 'dependencies', dependsOn: [j.a.id, j.b.id], onParentFailure: 'cancel' });
    expect(j.b.onParentFailure).toBe('run');
    expect(flow).toMatchObject({ name: 'etl', status: 'running', counts: { queued: 1, blocked: 3 } });

    const detail = (await q.flow(flow.id))!;
    expect(detail.flow).toMatchObject({ status: 'running', finishedAt: null, counts: { queued: 1, blocked: 3, succeeded: 0 } });
    expect(detail.edges).toEqual(
      expect.arrayContaining([[j.fetch.id, j.a.id], [j.fetch.id, j.b.id], [j.a.id, j.merge.id], [j.b.id, j.merge.id]]),
    );
    expect(detail.edges).toHaveLength(4);
    expect((await q.get(j.merge.id))!.dependsOn).toEqual([j.a.id, j.b.id]);
  });

  it('refuses duplicate refs, unknown refs and cycles with 400s naming them, writing nothing', async () => {
    const bad = (jobs: { ref: string; dependsOn?: string[] }[]) => q.createFlow(null, jobs.map((r) => ({ ...r, job: { kind: 'k' } })));
    await expect(bad([{ ref: 'a' }, { ref: 'a' }])).rejects.toThrow(/duplicate ref "a"/);
    // The whole message: it names the bad ref alone, and who named it (it once said "a → nope").
    await expect(bad([{ ref: 'a', dependsOn: ['nope'] }])).rejects.toThrow(
      /^unknown ref "nope" in the dependsOn of "a": a flow's dependsOn names refs of the same request$/,
    );
    await expect(bad([{ ref: 'a', dependsOn: ['a'] }])).rejects.toThrow(/cycle: a → a/);
    const cycle = bad([{ ref: 'x' }, { ref: 'a', dependsOn: ['c', 'x'] }, { ref: 'b', dependsOn: ['a'] }, { ref: 'c', dependsOn: ['b'] }]);
    await expect(cycle).rejects.toBeInstanceOf(ValidationError);
    await expect(cycle).rejects.toThrow(/cycle: (a → b → c → a|b → c → a → b|c → a → b → c)/);
    await expect(bad([{ ref: 'bad ref' }])).rejects.toThrow(/ref must be 1-128/);
    const { rows } = await db.pool.query('SELECT (SELECT count(*) FROM herald.jobs)::int AS jobs, (SELECT count(*) FROM herald.flows)::int AS flows');
    expect(rows[0]).toEqual({ jobs: 0, flows: 0 });
  });
});

describe('unblocking', () => {
  it('queues a child in the transaction that ends its last parent, with one unblocked event and a wake-up', async () => {
    const listen = new pg.Client({ connectionString: db.url });
    await listen.connect();
    const heard: string[] = [];
    listen.on('notification', (n) => heard.push(n.payload ?? ''));
    await listen.query('LISTEN herald_jobs');
    try {
      const { jobs } = await q.createFlow(null, [
        { ref: 'p1', job: { kind: 'p' } },
        { ref: 'p2', job: { kind: 'p', queue: 'other' } },
        { ref: 'c', dependsOn: ['p1', 'p2'], job: { kind: 'c', queue: 'kids' } },
      ]);
      const j = byRef(jobs);
      const [p1] = await q.claim({ worker: W, queues: ['default'], limit: 10 });
      await q.complete(W, [{ id: p1.id, attempt: p1.attempt, result: 1 }]);
      expect(await status(j.c.id)).toBe('blocked');
      const [p2] = await q.claim({ worker: W, queues: ['other'], limit: 10 });
      await q.complete(W, [{ id: p2.id, attempt: p2.attempt, result: 2 }]);
      const child = (await q.get(j.c.id))!;
      expect(child).toMatchObject({ status: 'queued', waitingFor: 'no_worker' });
      expect(await types(j.c.id)).toEqual(['enqueued', 'unblocked']);
      const unblocked = (await q.events(j.c.id))[1];
      expect(unblocked).toMatchObject({ status: 'queued', flowId: j.c.flowId });
      await expect.poll(() => heard, { timeout: 20_000 }).toContain('kids');
      expect(await q.parents(j.c.id)).toEqual([
        { id: j.p1.id, ref: 'p1', kind: 'p', status: 'succeeded', result: 1 },
        { id: j.p2.id, ref: 'p2', kind: 'p', status: 'succeeded', result: 2 },
      ]);
    } finally {
      await listen.end();
    }
  });

  it('never lets a worker take a blocked job, and a 1,000-parent child gets every parent in order', async () => {
    const refs = Array.from({ length: 1000 }, (_, i) => `p${i}`);
    const { jobs } = await q.createFlow('wide', refs.map((ref) => ({ ref, job: { kind: 'p' } })));
    const { job: all } = await q.enqueue({ kind: 'gather', dependsOn: jobs.map((j) => j.id).reverse() });
    expect(all.status).toBe('blocked');
    expect(await q.claim({ worker: W, kinds: ['gather'], limit: 10 })).toEqual([]);
    await run('p');
    const [child] = await q.claim({ worker: W, kinds: ['gather'], limit: 10 });
    expect(child.id).toBe(all.id);
    const parents = await q.parents(child.id);
    expect(parents).toHaveLength(1000);
    expect(parents.map((p) => p.ref)).toEqual([...refs].reverse());
    expect(parents.every((p) => p.status === 'succeeded')).toBe(true);
    expect(await types(all.id)).toEqual(['enqueued', 'unblocked', 'claimed']);
  });
});

describe('parent failure', () => {
  it('cancels dependents down the graph with reason dependency_failed; "run" children run once all parents end', async () => {
    const { flow, jobs } = await q.createFlow(null, [
      { ref: 'a', job: { kind: 'a' } },
      { ref: 'b', job: { kind: 'b' } },
      { ref: 'c', dependsOn: ['a'], job: { kind: 'c' } },
      { ref: 'd', dependsOn: ['c'], job: { kind: 'd' } },
      { ref: 'e', dependsOn: ['d'], job: { kind: 'e' } },
      { ref: 'r', dependsOn: ['a', 'b'], onParentFailure: 'run', job: { kind: 'r' } },
    ]);
    const j = byRef(jobs);
    await run('a', false);
    for (const ref of ['c', 'd', 'e']) expect(await status(j[ref].id)).toBe('cancelled');
    const cancelled = (await q.events(j.c.id)).at(-1)!;
    expect(cancelled).toMatchObject({ type: 'cancelled', data: { reason: 'dependency_failed', parent: j.a.id } });
    expect((await q.events(j.e.id)).at(-1)!.data).toEqual({ reason: 'dependency_failed', parent: j.d.id });
    expect(await status(j.r.id)).toBe('blocked');
    await run('b');
    expect(await status(j.r.id)).toBe('queued');
    await run('r');
    const detail = (await q.flow(flow.id))!;
    expect(detail.flow).toMatchObject({ status: 'failed', counts: { succeeded: 2, failed: 1, cancelled: 3 } });
    expect(detail.flow.finishedAt).not.toBeNull();
  });

  it('cancels a 1,000-deep chain in one go when its root fails', async () => {
    const chain = Array.from({ length: 1000 }, (_, i) => ({ ref: `n${i}`, dependsOn: i ? [`n${i - 1}`] : [], job: { kind: i ? 'link' : 'root' } }));
    const { flow } = await q.createFlow(null, chain);
    await run('root', false);
    expect((await q.flow(flow.id))!.flow).toMatchObject({ status: 'failed', counts: { failed: 1, cancelled: 999 } });
  });

  it('a deleted parent counts as failed for the children still waiting', async () => {
    const { jobs } = await q.createFlow(null, [
      { ref: 'done', job: { kind: 'x' } },
      { ref: 'slow', job: { kind: 'y' } },
      { ref: 'c', dependsOn: ['done', 'slow'], job: { kind: 'c' } },
    ]);
    const j = byRef(jobs);
    await run('x');
    await q.bulk('delete', { status: 'succeeded' });
    expect((await q.get(j.c.id))!).toMatchObject({ status: 'cancelled', lastError: { reason: 'dependency_failed', parent: j.done.id } });
    expect((await db.pool.query('SELECT count(*)::int AS n FROM herald.job_edges WHERE child = $1', [j.c.id])).rows[0].n).toBe(2);
  });
});

describe('big flows', () => {
  /** Rows of job_edges the statements of transaction c read so far (sequential and index scans). */
  const edgesRead = async (c: pg.ClientBase) =>
    (await c.query<{ n: number }>(
      `SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) AS n FROM pg_stat_xact_user_tables WHERE relid = 'herald.job_edges'::regclass`,
    )).rows[0].n;

  // Mutation caught: flow_after_update's settle of the finished parents' children without its
  // `, finished` argument (every parent of the child is read again: 1,000 edges per parent's end).
  it("a parent's end reads its own edges, not the other parents of its child", async () => {
    const refs = Array.from({ length: 999 }, (_, i) => `p${i}`);
    const { jobs } = await q.createFlow(null, [...refs.map((ref) => ({ ref, job: { kind: 'p' } })), { ref: 'c', dependsOn: refs, job: { kind: 'c' } }]);
    const child = jobs[999].id;
    const parents = await q.claim({ worker: W, kinds: ['p'], limit: 1000 });
    await db.pool.query('ANALYZE herald.job_edges');
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      for (const p of parents.slice(0, 3)) {
        await c.query('BEGIN');
        const before = await edgesRead(c);
        await c.query(
          `UPDATE herald.jobs SET status = 'succeeded', result = '1', finished_at = now(), locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL WHERE id = $1`,
          [p.id],
        );
        // Its one edge, read twice; every edge of the child was read before (999 and more).
        expect(Number(await edgesRead(c)) - Number(before)).toBeLessThan(20);
        await c.query('COMMIT');
      }
    } finally {
      await c.end();
    }
    expect(await status(child)).toBe('blocked');
    await q.complete(W, parents.slice(3).map((p) => ({ id: p.id, attempt: p.attempt, result: 1 })));
    expect(await status(child)).toBe('queued');
    expect((await q.parents(child)).map((p) => p.status)).toEqual(refs.map(() => 'succeeded'));
  });
});

describe('retention', () => {
  // Mutation caught: the cleanup's `AND NOT (p.has_children AND EXISTS (` made `AND NOT (false AND` (the old
  // parent goes, and its waiting child is cancelled as "parent 1 was deleted").
  it('keeps a finished parent while a child of it has not ended, and deletes it once they have', async () => {
    const { jobs } = await q.createFlow(null, [
      { ref: 'old', job: { kind: 'x' } },
      { ref: 'late', job: { kind: 'y', runAt: new Date(Date.now() + 86_400_000).toISOString() } },
      { ref: 'c', dependsOn: ['old', 'late'], job: { kind: 'c' } },
    ]);
    const j = byRef(jobs);
    await run('x');
    const week = 7 * 86_400_000;
    const age = () => db.pool.query(`UPDATE herald.jobs SET finished_at = now() - interval '8 days' WHERE id = $1`, [j.old.id]);
    await age();
    expect(await q.cleanup(week)).toBe(0);
    expect(await status(j.c.id)).toBe('blocked');

    // The other parent ends: the child is queued, and still needs the old parent's result.
    await db.pool.query(`UPDATE herald.jobs SET available_at = now() WHERE id = $1`, [j.late.id]);
    await run('y');
    expect(await q.cleanup(week)).toBe(0);
    await run('c');
    expect((await q.get(j.c.id))!.status).toBe('succeeded');
    expect(await q.cleanup(week)).toBe(1);
    expect(await q.get(j.old.id)).toBeNull();
  });
});

describe('dependsOn existing jobs', () => {
  it('waits for running parents, starts at once after finished ones, and refuses unknown ids', async () => {
    const { job: p } = await q.enqueue({ kind: 'p' });
    const { job: child } = await q.enqueue({ kind: 'c', dependsOn: [p.id] });
    expect(child).toMatchObject({ status: 'blocked', dependsOn: [p.id], onParentFailure: 'cancel', waitingFor: 'dependencies' });
    await run('p');
    expect(await status(child.id)).toBe('queued');

    const { job: late } = await q.enqueue({ kind: 'c', dependsOn: [p.id] });
    expect(late.status).toBe('queued');
    expect(await types(late.id)).toEqual(['enqueued', 'unblocked']);

    const { job: f } = await q.enqueue({ kind: 'f' });
    await run('f', false);
    const [doomed, runs] = await q.enqueueMany([
      { kind: 'c', dependsOn: [f.id] },
      { kind: 'c', dependsOn: [f.id, p.id], onParentFailure: 'run' },
    ]);
    expect(doomed.job).toMatchObject({ status: 'cancelled', lastError: { reason: 'dependency_failed', parent: f.id } });
    expect(runs.job.status).toBe('queued');

    const before = (await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs')).rows[0].n;
    await expect(q.enqueue({ kind: 'c', dependsOn: [p.id, '987654'] })).rejects.toThrow(/dependsOn names job 987654 that does not exist/);
    await expect(q.enqueueMany([{ kind: 'ok' }, { kind: 'c', dependsOn: ['987654'] }])).rejects.toBeInstanceOf(ValidationError);
    expect((await db.pool.query('SELECT count(*)::int AS n FROM herald.jobs')).rows[0].n).toBe(before);
  });
});

describe('flow actions', () => {
  it('cancel ends every unfinished job; a running one through its cancel request', async () => {
    const { flow, jobs } = await q.createFlow(null, [
      { ref: 'a', job: { kind: 'a' } },
      { ref: 'b', dependsOn: ['a'], job: { kind: 'b' } },
      { ref: 'x', job: { kind: 'x' } },
    ]);
    const j = byRef(jobs);
    await q.claim({ worker: W, kinds: ['a'], limit: 1 });
    expect(await q.cancelFlow(flow.id)).toBe(3);
    expect(await status(j.b.id)).toBe('cancelled');
    expect(await status(j.x.id)).toBe('cancelled');
    expect((await q.get(j.a.id))!).toMatchObject({ status: 'running', cancelRequested: true });
    await expect(q.cancelFlow('999')).rejects.toThrow(/flow 999 does not exist/);
  });

  it('retry runs the failed jobs again and the jobs cancelled because of them wait again', async () => {
    const { flow, jobs } = await q.createFlow(null, [
      { ref: 'ok', job: { kind: 'ok' } },
      { ref: 'bad', job: { kind: 'bad' } },
      { ref: 'mid', dependsOn: ['ok', 'bad'], job: { kind: 'mid' } },
      { ref: 'end', dependsOn: ['mid'], job: { kind: 'end' } },
      { ref: 'side', dependsOn: ['ok'], job: { kind: 'side' } },
    ]);
    const j = byRef(jobs);
    await run('ok');
    await run('bad', false);
    await run('side');
    expect((await q.flow(flow.id))!.flow).toMatchObject({ status: 'failed', counts: { succeeded: 2, failed: 1, cancelled: 2 } });

    expect(await q.retryFlow(flow.id)).toBe(3);
    expect(await status(j.bad.id)).toBe('queued');
    expect(await status(j.mid.id)).toBe('blocked');
    expect(await status(j.end.id)).toBe('blocked');
    expect((await q.flow(flow.id))!.flow.status).toBe('running');
    await run('bad');
    await run('mid');
    await run('end');
    const detail = (await q.flow(flow.id))!;
    expect(detail.flow).toMatchObject({ status: 'succeeded', counts: { succeeded: 5, failed: 0, cancelled: 0 } });
    expect(await types(j.end.id)).toEqual(['enqueued', 'cancelled', 'retried', 'unblocked', 'claimed', 'succeeded']);
    // The succeeded side job ran once.
    expect(await types(j.side.id)).toEqual(['enqueued', 'unblocked', 'claimed', 'succeeded']);
  });

  it('retrying one parent alone revives the jobs cancelled because of it', async () => {
    const { jobs } = await q.createFlow(null, [
      { ref: 'p', job: { kind: 'p' } },
      { ref: 'c', dependsOn: ['p'], job: { kind: 'c' } },
      { ref: 'g', dependsOn: ['c'], job: { kind: 'g' } },
    ]);
    const j = byRef(jobs);
    await run('p', false);
    await q.retry(j.p.id);
    expect(await status(j.c.id)).toBe('blocked');
    expect(await status(j.g.id)).toBe('blocked');
    await run('p');
    expect(await status(j.c.id)).toBe('queued');
  });

  it('lists flows newest first with a derived status filter', async () => {
    const a = await q.createFlow('one', [{ ref: 'a', job: { kind: 'one' } }]);
    const b = await q.createFlow('two', [{ ref: 'a', job: { kind: 'two' } }]);
    await run('one');
    expect((await q.flows()).flows.map((f) => f.name)).toEqual(['two', 'one']);
    expect((await q.flows({ status: 'succeeded' })).flows.map((f) => f.id)).toEqual([a.flow.id]);
    expect((await q.flows({ status: 'running' })).flows.map((f) => f.id)).toEqual([b.flow.id]);
    const page = await q.flows({ limit: 1 });
    expect(page.next).toBe(b.flow.id);
    expect((await q.flows({ before: page.next!, limit: 1 })).flows[0].id).toBe(a.flow.id);
  });
});

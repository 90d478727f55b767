// Workflows under the interleavings a read of the settlers finds: a job made blocked again in a
// transaction still open while its last parent ends. Each test holds one transaction open (a raw
// session running the product's own statement), lets the other write start, and continues only
// once pg_blocking_pids shows it waiting for the open one, or once it has returned without waiting
// (the bug); nothing waits on time.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { namedQueueSessions } from '../test/support/sessions.ts';
import { lockWaitersReach, lockWaitsHold, pidOf, type LockWait } from '../test/support/lock-waiters.ts';
import { waitFor } from '../test/support/wait.ts';
import { retryJob } from './sql/admin.ts';
import { retryFlow } from './sql/flows.ts';
import { bulkStatements } from './sql/search.ts';
import { filterValues } from './search.ts';

const db = useTestDatabase({}, { truncate: ['herald.jobs', 'herald.job_events', 'herald.job_edges', 'herald.flows'] });
const q = db.queue;
const sessions = namedQueueSessions(db.url);
afterAll(() => sessions.end());
/** A Queue whose statements run in their own sessions, named `name` in pg_stat_activity. */
const session = (name: string) => sessions.session(name);

/** A session with a transaction begun, and its backend pid. */
async function openTx(): Promise<{ c: pg.Client; pid: number }> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  const pid = await pidOf(c);
  await c.query('BEGIN');
  return { c, pid };
}

async function commit(c: pg.Client): Promise<void> {
  await c.query('COMMIT');
  await c.end();
}

/**
 * Resolves once `wait` holds, or once `write` has returned without waiting: the bug these tests
 * catch, which the assertions after then report.
 */
async function waitingOr(write: Promise<unknown>, wait: LockWait): Promise<void> {
  let returned = false;
  write.then(() => (returned = true), () => (returned = true));
  await waitFor(async () => returned || (await lockWaitsHold(db.pool, wait)), { what: 'the write to wait for the open transaction, or to return', timeoutMs: 30_000 });
}

const status = async (id: string) => (await q.get(id))!.status;

/** Flow P1, P2 → C with P1 succeeded, P2 running, and C cancelled (by `cancel`). */
async function halfDone(cancel: (flow: string, child: string) => Promise<unknown>) {
  const { flow, jobs } = await q.createFlow(null, [
    { ref: 'p1', job: { kind: 'p' } },
    { ref: 'p2', job: { kind: 'p' } },
    { ref: 'c', dependsOn: ['p1', 'p2'], job: { kind: 'c' } },
  ]);
  const claimed = await q.claim({ worker: 'w', kinds: ['p'], limit: 2 });
  const p1 = claimed.find((j) => j.ref === 'p1')!;
  const p2 = claimed.find((j) => j.ref === 'p2')!;
  await q.complete('w', [{ id: p1.id, attempt: p1.attempt, result: 1 }]);
  const child = jobs[2].id;
  await cancel(flow.id, child);
  expect(await status(child)).toBe('cancelled');
  return { flow: flow.id, child, p2 };
}

describe('a job blocked again while its last parent ends', () => {
  // Two statements of flow_settle each make the ending parent wait for the open retry: the first
  // pass's lock of every child whatever its status, and the count-down (an UPDATE of each child).
  // Mutation caught: both filtered to `status = 'blocked'` (one line each; the ending parent skips
  // the child the retry is moving back to blocked, so C stays blocked with both parents ended).
  it('flow retry: the parent\'s settle waits for the open retry, then queues the child', async () => {
    const { flow, child, p2 } = await halfDone((flow) => q.cancelFlow(flow));
    const retry = await openTx();
    await retry.c.query(retryFlow.text, [flow]);
    // Its own settle saw P2 running: the child stays blocked inside the retry.
    expect((await retry.c.query(`SELECT status FROM herald.jobs WHERE id = $1`, [child])).rows[0].status).toBe('blocked');
    const ending = session('ending').complete('w', [{ id: p2.id, attempt: p2.attempt, result: 2 }]);
    await waitingOr(ending, { waiter: { app: 'ending' }, holder: retry.pid });
    await commit(retry.c);
    expect(await ending).toEqual([]);
    expect(await status(child)).toBe('queued');
    expect((await q.flow(flow))!.flow.status).toBe('running');
    expect((await q.events(child)).map((e) => e.type)).toEqual(['enqueued', 'cancelled', 'retried', 'unblocked']);
  });

  // Mutation caught: the same two filters as above; a job retry takes the same path.
  it('job retry: the same window, the same settle', async () => {
    const { child, p2 } = await halfDone((_flow, child) => q.cancel(child));
    const retry = await openTx();
    await retry.c.query(retryJob.text, [child]);
    const ending = session('ending').complete('w', [{ id: p2.id, attempt: p2.attempt, result: 2 }]);
    await waitingOr(ending, { waiter: { app: 'ending' }, holder: retry.pid });
    await commit(retry.c);
    await ending;
    expect(await status(child)).toBe('queued');
  });

  // Mutation caught: the same two filters; a bulk retry (over a filter, in batches) takes it too.
  it('bulk retry: the same window, the same settle', async () => {
    const { child, p2 } = await halfDone((_flow, child) => q.cancel(child));
    const retry = await openTx();
    await retry.c.query(bulkStatements.retry.text, [...filterValues({ kind: 'c' }), null, 100]);
    const ending = session('ending').complete('w', [{ id: p2.id, attempt: p2.attempt, result: 2 }]);
    await waitingOr(ending, { waiter: { app: 'ending' }, holder: retry.pid });
    await commit(retry.c);
    await ending;
    expect(await status(child)).toBe('queued');
  });

  // Three statements close this window, each alone: the first pass's lock of what a cancel can
  // reach, and, in the nested settle of B's children (B's cancel ends a parent), its lock of every
  // child and its count-down. Caught only by the three together (the pass without descendants, and
  // both filtered to `status = 'blocked'`): the walk then skips the grandchild the open retry is
  // moving back to blocked.
  it('cascading cancel: a grandchild retried while its grandparent fails is cancelled, not left blocked', async () => {
    // A → B → D; D was cancelled alone, and is retried while A fails.
    const { jobs } = await q.createFlow(null, [
      { ref: 'a', job: { kind: 'a' } },
      { ref: 'b', dependsOn: ['a'], job: { kind: 'b' } },
      { ref: 'd', dependsOn: ['b'], job: { kind: 'd' } },
    ]);
    const [a] = await q.claim({ worker: 'w', kinds: ['a'], limit: 1 });
    const d = jobs[2].id;
    await q.cancel(d);
    const retry = await openTx();
    await retry.c.query(retryJob.text, [d]);
    const failing = session('failing').fail('w', [{ id: a.id, attempt: a.attempt, error: new Error('no'), final: true }]);
    await waitingOr(failing, { waiter: { app: 'failing' }, holder: retry.pid });
    await commit(retry.c);
    await failing;
    expect(await status(jobs[1].id)).toBe('cancelled');
    expect((await q.get(d))!).toMatchObject({ status: 'cancelled', lastError: { reason: 'dependency_failed', parent: jobs[1].id } });
  });
});

describe('a parent that runs again', () => {
  // Mutation caught: flow_reopen's first step without `OR (c.status = 'queued' AND
  // c.on_parent_failure = 'run')` (the queued child keeps going while its parent runs again).
  it('makes its queued `run` child wait again, until it ends again', async () => {
    const { flow, jobs } = await q.createFlow(null, [
      { ref: 'p', job: { kind: 'p' } },
      { ref: 'r', dependsOn: ['p'], onParentFailure: 'run', job: { kind: 'r' } },
    ]);
    const r = jobs[1].id;
    const [p] = await q.claim({ worker: 'w', kinds: ['p'], limit: 1 });
    await q.fail('w', [{ id: p.id, attempt: p.attempt, error: new Error('no'), final: true }]);
    expect(await status(r)).toBe('queued');

    expect(await q.retryFlow(flow.id)).toBe(1);
    expect(await status(r)).toBe('blocked');
    expect(await q.claim({ worker: 'w', kinds: ['r'], limit: 1 })).toEqual([]);
    const [again] = await q.claim({ worker: 'w', kinds: ['p'], limit: 1 });
    await q.complete('w', [{ id: again.id, attempt: again.attempt, result: 'ok' }]);
    expect(await status(r)).toBe('queued');
    expect(await q.parents(r)).toMatchObject([{ id: p.id, status: 'succeeded', result: 'ok' }]);
  });
});

describe('deadlocks', () => {
  // Mutation caught: flow_settle's reach without its descendants (`WHERE r.cancels` → `WHERE false`):
  // the cascade then locks y after z, against the other settler's y then z, and PostgreSQL aborts one.
  it('two settlers lock in one order: a cascade and an unblock over the same jobs both commit', async () => {
    // a fails: its children x and z are cancelled, and y and w below x. b succeeds: its children
    // are y and z. Ids follow the dependency order: x < y < w < z.
    const { jobs } = await q.createFlow(null, [
      { ref: 'a', job: { kind: 'a' } },
      { ref: 'b', job: { kind: 'b' } },
      { ref: 'x', dependsOn: ['a'], job: { kind: 'k' } },
      { ref: 'y', dependsOn: ['x', 'b'], job: { kind: 'k' } },
      { ref: 'w', dependsOn: ['x'], job: { kind: 'k' } },
      { ref: 'z', dependsOn: ['a', 'b', 'w'], job: { kind: 'k' } },
    ]);
    const [, , x, y, w, z] = jobs.map((j) => j.id);
    expect([x, y, w, z].map(BigInt)).toEqual([x, y, w, z].map(BigInt).sort((m, n) => (m < n ? -1 : 1)));
    const [a] = await q.claim({ worker: 'w', kinds: ['a'], limit: 1 });
    const [b] = await q.claim({ worker: 'w', kinds: ['b'], limit: 1 });
    // z is held: the failing settler waits for it first, then the succeeding one queues behind.
    const holder = await openTx();
    await holder.c.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [z]);
    const failing = session('failing').fail('w', [{ id: a.id, attempt: a.attempt, error: new Error('no'), final: true }]);
    await lockWaitersReach(db.pool, { waiter: { app: 'failing' }, holder: holder.pid });
    const ending = session('ending').complete('w', [{ id: b.id, attempt: b.attempt, result: null }]);
    await lockWaitersReach(db.pool, { waiter: { app: 'failing' }, holder: holder.pid }, { waiter: { app: 'ending' }, holder: holder.pid });
    await commit(holder.c);
    expect(await Promise.all([failing, ending])).toEqual([[], []]);
    expect(await Promise.all([x, y, w, z].map(status))).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
  });

  // Mutation caught: FlowService.acting without retryOnConflict (the user gets the deadlock as a 500).
  it('a flow cancel that PostgreSQL aborts to break a deadlock runs again', async () => {
    const { flow, jobs } = await q.createFlow(null, [{ ref: 'j1', job: { kind: 'k' } }, { ref: 'j2', job: { kind: 'k' } }]);
    const [j1, j2] = jobs.map((j) => j.id);
    // The other side of the deadlock never gives up first: the cancel is the one aborted.
    const other = await openTx();
    await other.c.query(`SET LOCAL deadlock_timeout = '1h'`);
    await other.c.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [j2]);
    const cancelling = session('cancelling').cancelFlow(flow.id);
    await lockWaitersReach(db.pool, { waiter: { app: 'cancelling' }, holder: other.pid });
    await other.c.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [j1]);
    await commit(other.c);
    expect(await cancelling).toBe(2);
    expect(await Promise.all([j1, j2].map(status))).toEqual(['cancelled', 'cancelled']);
  });
});

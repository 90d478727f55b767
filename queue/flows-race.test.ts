// The race of workflows: two parents of one child ending at the same instant in two sessions,
// a new child added while its parent ends, and many claimers at once. Held row locks force the
// bad orders; nothing waits on time.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../test/support/db.ts';
import { namedQueueSessions } from '../test/support/sessions.ts';
import { lockWaitersReach, pidOf } from '../test/support/lock-waiters.ts';

const db = useTestDatabase({}, { truncate: ['herald.jobs', 'herald.job_events', 'herald.job_edges', 'herald.flows'] });
const q = db.queue;
const sessions = namedQueueSessions(db.url);
afterAll(() => sessions.end());
/** A Queue whose statements run in their own sessions, named `name` in pg_stat_activity. */
const session = (name: string) => sessions.session(name);

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  return c;
}

const types = async (id: string) => (await q.events(id)).map((e) => e.type);

describe('two parents ending at once', () => {
  it('unblocks the child exactly once, whichever transaction takes its lock first', async () => {
    const { jobs } = await q.createFlow(null, [
      { ref: 'p1', job: { kind: 'p' } },
      { ref: 'p2', job: { kind: 'p' } },
      { ref: 'c', dependsOn: ['p1', 'p2'], job: { kind: 'c' } },
    ]);
    const child = jobs[2].id;
    const [a, b] = await q.claim({ worker: 'w', kinds: ['p'], limit: 2 });

    // Hold the child's row: both completions write their parent, then wait in the trigger for it.
    const holder = await client();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [child]);
    const ends = [
      session('end-a').complete('w', [{ id: a.id, attempt: a.attempt, result: 'a' }]),
      session('end-b').complete('w', [{ id: b.id, attempt: b.attempt, result: 'b' }]),
    ];
    const held = await pidOf(holder);
    await lockWaitersReach(db.pool, { waiter: { app: 'end-a' }, holder: held }, { waiter: { app: 'end-b' }, holder: held });
    // Both parents are written (uncommitted) now. A count read before the lock (each sees the
    // other parent still running) would leave the child blocked for ever; a recount under the
    // lock sees the other commit. Caught: flow_settle's first lock pass without FOR UPDATE (the
    // second completion then never waits for the holder).
    await holder.query('COMMIT');
    await holder.end();
    expect(await Promise.all(ends)).toEqual([[], []]);

    expect((await q.get(child))!.status).toBe('queued');
    expect(await types(child)).toEqual(['enqueued', 'unblocked']);
  });

  it('a parent failing while another succeeds cancels the child once and never queues it', async () => {
    const { jobs } = await q.createFlow(null, [
      { ref: 'ok', job: { kind: 'p' } },
      { ref: 'bad', job: { kind: 'p' } },
      { ref: 'c', dependsOn: ['ok', 'bad'], job: { kind: 'c' } },
    ]);
    const child = jobs[2].id;
    const claimed = await q.claim({ worker: 'w', kinds: ['p'], limit: 2 });
    const ok = claimed.find((j) => j.ref === 'ok')!;
    const bad = claimed.find((j) => j.ref === 'bad')!;
    const holder = await client();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [child]);
    const ends = [
      session('end-ok').complete('w', [{ id: ok.id, attempt: ok.attempt, result: null }]),
      session('end-bad').fail('w', [{ id: bad.id, attempt: bad.attempt, error: new Error('no'), final: true }]),
    ];
    const held = await pidOf(holder);
    await lockWaitersReach(db.pool, { waiter: { app: 'end-ok' }, holder: held }, { waiter: { app: 'end-bad' }, holder: held });
    await holder.query('COMMIT');
    await holder.end();
    await Promise.all(ends);
    expect((await q.get(child))!).toMatchObject({ status: 'cancelled', lastError: { reason: 'dependency_failed', parent: bad.id } });
    expect(await types(child)).toEqual(['enqueued', 'cancelled']);
  });
});

describe('a child added while its parent ends', () => {
  it('sees the parent end: the enqueue waits for the finishing transaction, then settles the child', async () => {
    const { job: parent } = await q.enqueue({ kind: 'p' });
    const [p] = await q.claim({ worker: 'w', kinds: ['p'], limit: 1 });
    // The parent's completion is written but not committed when the child is enqueued.
    const finisher = await client();
    await finisher.query('BEGIN');
    await finisher.query(
      `UPDATE herald.jobs SET status = 'succeeded', result = '1', finished_at = now(), locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL
       WHERE id = $1 AND attempt = $2`,
      [p.id, p.attempt],
    );
    const adding = session('adding').enqueue({ kind: 'c', dependsOn: [parent.id] });
    await lockWaitersReach(db.pool, { waiter: { app: 'adding' }, holder: await pidOf(finisher) });
    await finisher.query('COMMIT');
    await finisher.end();
    const { job } = await adding;
    expect(job.status).toBe('queued');
    expect(await types(job.id)).toEqual(['enqueued', 'unblocked']);
  });

  it('an ending parent waits for the new edge and unblocks the child itself', async () => {
    const { job: parent } = await q.enqueue({ kind: 'p' });
    const [p] = await q.claim({ worker: 'w', kinds: ['p'], limit: 1 });
    // Lock the parent as an enqueue of a child does, then let the completion queue up behind it.
    const adder = await client();
    await adder.query('BEGIN');
    await adder.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [parent.id]);
    const ending = session('ending').complete('w', [{ id: p.id, attempt: p.attempt, result: 1 }]);
    await lockWaitersReach(db.pool, { waiter: { app: 'ending' }, holder: await pidOf(adder) });
    const { rows } = await adder.query(
      `INSERT INTO herald.jobs (kind, status, on_parent_failure, waiting_on) VALUES ('c', 'blocked', 'cancel', 1) RETURNING id::text AS id`,
    );
    const child = rows[0].id as string;
    await adder.query('UPDATE herald.jobs SET has_children = true WHERE id = $1', [parent.id]);
    await adder.query('INSERT INTO herald.job_edges (child, parent, pos) VALUES ($1, $2, 0)', [child, parent.id]);
    await adder.query('COMMIT');
    await adder.end();
    expect(await ending).toEqual([]);
    expect((await q.get(child))!.status).toBe('queued');
    expect(await types(child)).toEqual(['enqueued', 'unblocked']);
  });
});

describe('concurrent claimers', () => {
  it('runs a random DAG through four claimers: every job once, every child unblocked exactly once', async () => {
    const N = 120;
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    const jobs = Array.from({ length: N }, (_, i) => {
      const deps = new Set<string>();
      for (let k = 0; k < Math.min(i, rand(6)); k++) deps.add(`j${rand(i)}`);
      return { ref: `j${i}`, dependsOn: [...deps], job: { kind: 'k' } };
    });
    const { flow } = await q.createFlow('dag', jobs);
    const workers = Array.from({ length: 4 }, (_, w) => {
      const s = session(`claimer-${w}`);
      return (async () => {
        for (;;) {
          const got = await s.claim({ worker: `w${w}`, kinds: ['k'], limit: 1 + (w % 3) });
          if (got.length === 0) {
            const open = (await q.flow(flow.id))!.flow.status === 'running';
            if (!open) return;
            await new Promise((r) => setTimeout(r, 2));
            continue;
          }
          await s.complete(`w${w}`, got.map((j) => ({ id: j.id, attempt: j.attempt, result: j.ref })));
        }
      })();
    });
    await Promise.all(workers);
    const detail = (await q.flow(flow.id))!;
    expect(detail.flow).toMatchObject({ status: 'succeeded', counts: { succeeded: N } });
    const { rows } = await db.pool.query(
      `SELECT job_id::text AS id, count(*) FILTER (WHERE type = 'unblocked')::int AS unblocked,
              count(*) FILTER (WHERE type = 'succeeded')::int AS succeeded,
              count(*) FILTER (WHERE type = 'claimed')::int AS claimed
       FROM herald.job_events GROUP BY job_id`,
    );
    const withParents = new Set(detail.jobs.filter((j) => j.dependsOn.length).map((j) => j.id));
    for (const r of rows) {
      expect(r, `job ${r.id}`).toMatchObject({ unblocked: withParents.has(r.id) ? 1 : 0, succeeded: 1, claimed: 1 });
    }
    // A child started only after every parent had finished.
    const ended = new Map(detail.jobs.map((j) => [j.id, Date.parse(j.finishedAt!)]));
    for (const j of detail.jobs) for (const p of j.dependsOn) expect(Date.parse(j.startedAt!)).toBeGreaterThanOrEqual(ended.get(p)!);
  });
});

// Durable handlers against real PostgreSQL, with in-process workers: stored steps replayed, sleeps
// and waits that free the slot, signals kept until the wait, invoke, fencing, failing for good.
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { lockWaitersReach, pidOf } from './support/lock-waiters.ts';
import { createPool } from '../queue/database.ts';
import { Db } from '../queue/services/db.ts';
import { waitFor } from './support/wait.ts';
import { Worker } from '../worker/worker.ts';
import type { WorkerOptions } from '../worker/options.ts';
import { UnrecoverableError } from '../worker/errors.ts';
import type { TaskContext } from '../worker/tasks.ts';
import { DurableService } from '../queue/services/durable.ts';
import { Queue } from '../queue/queue.ts';
import order from '../examples/approval/tasks/order.ts';
import { SIGNAL_LOCK_NAMESPACE } from '../queue/locks.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

let queueNo = 0;
async function withWorker(opts: Partial<WorkerOptions>, fn: (w: Worker, queue: string) => Promise<void>, queue = `d${++queueNo}`): Promise<void> {
  const w = new Worker({ databaseUrl: db.url, concurrency: 4, pollMs: 60_000, queues: [queue], backoffBaseMs: 1, backoffMaxMs: 1, ...opts });
  await w.start();
  try {
    await fn(w, queue);
  } finally {
    await w.stop();
  }
}

const ended = (id: string) =>
  waitFor(async () => {
    const j = await db.queue.get(id);
    return j && ['succeeded', 'failed', 'cancelled'].includes(j.status) ? j : null;
  }, { what: `job ${id} to end` });

const types = async (id: string) => (await db.queue.events(id)).map((e) => e.type);
const hasEvent = (id: string, type: string, n = 1) =>
  waitFor(async () => (await types(id)).filter((t) => t === type).length >= n, { what: `job ${id}'s ${n} ${type} event(s)` });

/** Ends a sleep now: its stored wake-up time and the job's runAt move to now, and workers are woken. */
async function wakeSleeper(id: string): Promise<void> {
  const c = await db.pool.connect();
  try {
    await c.query('BEGIN');
    await c.query(`UPDATE herald.job_steps SET result = jsonb_build_object('until', now()) WHERE job_id = $1 AND type = 'sleep'`, [id]);
    await c.query(`UPDATE herald.jobs SET available_at = now() WHERE id = $1 RETURNING herald.wake_at_commit(ARRAY['herald_jobs ' || queue])`, [id]);
    await c.query('COMMIT');
  } finally {
    c.release();
  }
}

describe('ctx.step', () => {
  it('replays finished steps after a failed attempt: a side effect runs once, the next attempt runs only what is left', async () => {
    let charged = 0;
    let shipped = 0;
    const order = async (_p: unknown, ctx: TaskContext) => {
      const charge = await ctx.step('charge', () => ({ receipt: `r${++charged}`, at: new Date(0) }));
      if (ctx.job.attempt === 1) throw new Error('crashed after the charge');
      const ship = await ctx.step('ship', () => ++shipped);
      return { charge, ship };
    };
    await withWorker({ tasks: { order } }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'order', queue, maxAttempts: 2 });
      const done = await ended(job.id);
      // The first run's value as stored: a Date came back as its JSON string, in both runs alike.
      expect(done).toMatchObject({ status: 'succeeded', attempt: 2, result: { charge: { receipt: 'r1', at: '1970-01-01T00:00:00.000Z' }, ship: 1 } });
      expect([charged, shipped]).toEqual([1, 1]);
      const steps = await db.queue.steps(job.id);
      expect(steps.map((s) => [s.name, s.occurrence, s.attempt])).toEqual([['charge', 0, 1], ['ship', 0, 2]]);
      expect(steps[0].result).toEqual({ receipt: 'r1', at: '1970-01-01T00:00:00.000Z' });
      const events = await db.queue.events(job.id);
      expect(events.filter((e) => e.type === 'step').map((e) => (e.data as { name: string }).name)).toEqual(['charge', 'ship']);
    });
  });

  it('finds a step by name and occurrence: a loop of one name stores each turn', async () => {
    let runs = 0;
    const loop = async (_p: unknown, ctx: TaskContext) => {
      const out: number[] = [];
      for (let i = 0; i < 3; i++) out.push(await ctx.step('item', () => { runs++; return i * 10; }));
      if (ctx.job.attempt === 1) throw new Error('again');
      return out;
    };
    await withWorker({ tasks: { loop } }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'loop', queue, maxAttempts: 2 });
      expect(await ended(job.id)).toMatchObject({ status: 'succeeded', result: [0, 10, 20] });
      expect(runs).toBe(3);
    });
  });

  it('UnrecoverableError fails the job at once, whatever attempts are left', async () => {
    let calls = 0;
    const card = async () => {
      calls++;
      throw new UnrecoverableError('card declined');
    };
    await withWorker({ tasks: { card } }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'card', queue, maxAttempts: 5 });
      expect(await ended(job.id)).toMatchObject({ status: 'failed', attempt: 1, lastError: { message: 'card declined', name: 'UnrecoverableError' } });
      expect(calls).toBe(1);
    });
  });

  it("a stale attempt cannot store a step: its write waits for the takeover's lock, then finds the lease gone", async () => {
    // Catches: saveSteps' fence without FOR SHARE (it would read the old row and store the step).
    const queue = `d${++queueNo}`;
    const { job } = await db.queue.enqueue({ kind: 'k', queue });
    const [claimed] = await db.queue.claim({ worker: 'w:stale:1', queues: [queue], limit: 1 });
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [job.id]);
      const stale = createPool(db.url, { max: 1, applicationName: 'durable-test:stale' });
      const write = new DurableService(new Db(stale))
        .saveSteps('w:stale:1', [{ lease: claimed, name: 'charge', occurrence: 0, json: '"paid"', ms: 1 }])
        .finally(() => stale.end());
      await lockWaitersReach(db.pool, { waiter: { app: 'durable-test:stale' }, holder: await pidOf(holder) });
      // The takeover (as the reaper does): the job is queued again, without an owner.
      await holder.query(
        `UPDATE herald.jobs SET status = 'queued', locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL,
                last_error = '{"message": "lease expired", "reason": "lease_expired"}' WHERE id = $1`,
        [job.id],
      );
      await holder.query('COMMIT');
      expect(await write).toEqual([false]);
      expect(await db.queue.steps(job.id)).toEqual([]);
      expect(await types(job.id)).not.toContain('step');
    } finally {
      await holder.end();
    }
  });

  it("steps of several runs written in one statement are fenced each on its own: a lost lease's step is refused, the others stored with their events", async () => {
    // Catches: the fence read once for the whole batch (say, held = whether any row locked), which
    // would tell the stale run its step was stored.
    const queue = `d${++queueNo}`;
    const jobs = await db.queue.enqueueMany([{ kind: 'k', queue }, { kind: 'k', queue }]);
    const [a, b] = await db.queue.claim({ worker: 'w:batch:1', queues: [queue], limit: 2 });
    // b's lease is taken over before the write: its step must not land.
    await db.pool.query(`UPDATE herald.jobs SET status = 'queued', locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL WHERE id = $1`, [b.id]);
    const held = await new DurableService(db.queue.db).saveSteps('w:batch:1', [
      { lease: a, name: 'charge', occurrence: 0, json: '"paid"', ms: 2 },
      { lease: b, name: 'charge', occurrence: 0, json: '"paid twice"', ms: 2 },
      { lease: a, name: 'ship', occurrence: 0, json: '7', ms: 1 },
    ]);
    expect(held).toEqual([true, false, true]);
    expect((await db.queue.steps(a.id)).map((st) => [st.name, st.result])).toEqual([['charge', 'paid'], ['ship', 7]]);
    expect(await db.queue.steps(b.id)).toEqual([]);
    expect((await types(a.id)).filter((t) => t === 'step')).toHaveLength(2);
    expect(await types(b.id)).not.toContain('step');
    expect(jobs).toHaveLength(2);
  });
});

describe('ctx.sleep', () => {
  it('frees the slot: a one-slot worker runs another job while one sleeps, and the sleeper resumes after its sleep', async () => {
    let before = 0;
    const sleeper = async (_p: unknown, ctx: TaskContext) => {
      await ctx.step('before', () => ++before);
      await ctx.sleep(3_600_000);
      return 'woke';
    };
    await withWorker({ tasks: { sleeper, plain: () => 'plain' }, concurrency: 1 }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'sleeper', queue, maxAttempts: 1 });
      await hasEvent(job.id, 'sleeping');
      const slept = await db.queue.get(job.id);
      expect(slept).toMatchObject({ status: 'queued', attempt: 0, waitingFor: 'sleep', lockedBy: null, wait: { type: 'sleep' } });
      expect(Date.parse(slept!.wait!.until!)).toBe(Date.parse(slept!.runAt));
      const { job: other } = await db.queue.enqueue({ kind: 'plain', queue });
      expect(await ended(other.id)).toMatchObject({ status: 'succeeded' });
      await wakeSleeper(job.id);
      // maxAttempts 1: the sleep used no attempt.
      expect(await ended(job.id)).toMatchObject({ status: 'succeeded', result: 'woke', attempt: 1, wait: null });
      expect(before).toBe(1);
      const t = await types(job.id);
      expect(t.slice(0, 5)).toEqual(['enqueued', 'claimed', 'step', 'sleeping', 'claimed']);
      expect(t).toContain('resumed');
    });
  });

  it('cancel reaches a sleeper at once: it is queued, so it ends cancelled without a worker', async () => {
    const sleeper = async (_p: unknown, ctx: TaskContext) => {
      await ctx.sleep(3_600_000);
    };
    await withWorker({ tasks: { sleeper } }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'sleeper', queue });
      await hasEvent(job.id, 'sleeping');
      const cancelled = await db.queue.cancel(job.id);
      expect(cancelled).toMatchObject({ status: 'cancelled', wait: null });
      expect((await types(job.id)).at(-1)).toBe('cancelled');
    });
  });
});

describe('changed code', () => {
  it('a job whose code changed while it slept resumes: kept steps are read back, a new one runs, a dropped one is named in the log', async () => {
    const ran: string[] = [];
    const v1 = async (_p: unknown, ctx: TaskContext) => {
      await ctx.step('legacy', () => ran.push('legacy'));
      await ctx.step('charge', () => (ran.push('charge'), 'paid'));
      await ctx.sleep(3_600_000);
      return 'v1';
    };
    const v2 = async (_p: unknown, ctx: TaskContext) => {
      await ctx.step('audit', () => ran.push('audit'));
      const charge = await ctx.step('charge', () => (ran.push('charge again'), 'paid twice'));
      await ctx.sleep(3_600_000);
      return `v2 ${charge}`;
    };
    const queue = `d${++queueNo}`;
    let id = '';
    await withWorker({ tasks: { order: v1 } }, async () => {
      id = (await db.queue.enqueue({ kind: 'order', queue })).job.id;
      await hasEvent(id, 'sleeping');
    }, queue);
    const lines: { msg: string; job?: string; step?: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
    await withWorker({ tasks: { order: v2 }, logger }, async () => {
      await wakeSleeper(id);
      expect(await ended(id)).toMatchObject({ status: 'succeeded', result: 'v2 paid' });
    }, queue);
    expect(ran).toEqual(['legacy', 'charge', 'audit']);
    expect(lines.filter((l) => l.step === 'legacy').map((l) => [l.job, l.msg])).toEqual([[id, expect.stringMatching(/not called on replay/)]]);
  });
});

describe('ctx.waitFor and signals', () => {
  it('a signal sent before the wait is kept and returned there at once', async () => {
    const approval = async (_p: unknown, ctx: TaskContext) => ctx.waitFor('approve');
    const queue = `d${++queueNo}`;
    const { job } = await db.queue.enqueue({ kind: 'approval', queue });
    await db.queue.signal(job.id, 'approve', { by: 'ann' });
    await withWorker({ tasks: { approval } }, async () => {
      expect(await ended(job.id)).toMatchObject({ status: 'succeeded', result: { by: 'ann' } });
      const t = await types(job.id);
      expect(t).toEqual(['enqueued', 'signalled', 'claimed', 'succeeded']);
    }, queue);
  });

  it('a wait frees the slot; the signal wakes the job at once; a second signal of that name is refused', async () => {
    const approval = async (_p: unknown, ctx: TaskContext) => {
      const amount = await ctx.step('quote', () => 42);
      const answer = await ctx.waitFor<{ ok: boolean }>('approve');
      return { amount, answer };
    };
    await withWorker({ tasks: { approval }, concurrency: 1 }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'approval', queue, maxAttempts: 1 });
      await hasEvent(job.id, 'waiting');
      expect(await db.queue.get(job.id)).toMatchObject({ status: 'queued', waitingFor: 'signal', wait: { type: 'signal', name: 'approve' } });
      await db.queue.signal(job.id, 'approve', { ok: true });
      await expect(db.queue.signal(job.id, 'approve', { ok: false })).rejects.toMatchObject({ code: 'HERALD_SIGNAL_SENT' });
      expect(await ended(job.id)).toMatchObject({ status: 'succeeded', result: { amount: 42, answer: { ok: true } } });
      const t = await types(job.id);
      expect(t).toEqual(['enqueued', 'claimed', 'step', 'waiting', 'signalled', 'claimed', 'resumed', 'succeeded']);
      const waiting = (await db.queue.events(job.id)).find((e) => e.type === 'waiting');
      expect(waiting!.data).toEqual({ signal: 'approve', until: null });
      await expect(db.queue.signal(job.id, 'other')).rejects.toMatchObject({ code: 'HERALD_SIGNAL_SENT' });
      await expect(db.queue.signal('999999999', 'approve')).rejects.toMatchObject({ code: 'HERALD_NOT_FOUND' });
    });
  });

  it('a wait that times out returns null, and a later signal of that name is refused: the handler and the events agree', async () => {
    const approval = async (_p: unknown, ctx: TaskContext) => ({ answer: await ctx.waitFor('approve', { timeoutMs: 1 }) });
    await withWorker({ tasks: { approval } }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'approval', queue });
      expect(await ended(job.id)).toMatchObject({ status: 'succeeded', result: { answer: null } });
      await expect(db.queue.signal(job.id, 'approve', 1)).rejects.toMatchObject({ code: 'HERALD_SIGNAL_SENT' });
      expect(await types(job.id)).not.toContain('signalled');
    });
  });
});

describe('a signal and a timeout that race resolve one way, and the events agree with the handler', () => {
  /** A handler held before its wait (after its first read) until the test lets it go on. */
  function heldWait() {
    let arrived!: () => void;
    let release!: () => void;
    const atWait = new Promise<void>((r) => (arrived = r));
    const go = new Promise<void>((r) => (release = r));
    const task = async (_p: unknown, ctx: TaskContext) => {
      await ctx.step('first', () => 1);
      arrived();
      await go;
      // Already past its deadline: the wait resolves now, a signal or the timeout.
      return { answer: await ctx.waitFor('approve', { timeoutMs: 0 }) };
    };
    return { task, atWait, release };
  }

  async function holdSession(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: db.url, application_name: 'durable-test:holder' });
    await c.connect();
    await c.query('BEGIN');
    return c;
  }

  it('a signal that commits while the timeout waits is what the handler gets', async () => {
    // Catches: DurableService.timeOut taking a conflict on the key for its own timeout (returning
    // null without reading the signal that holds the key).
    const h = heldWait();
    await withWorker({ tasks: { approval: h.task }, leaseMs: 600_000 }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'approval', queue });
      await h.atWait;
      const holder = await holdSession();
      try {
        await holder.query('SELECT 1 FROM herald.jobs WHERE id = $1 FOR UPDATE', [job.id]);
        h.release();
        // The timeout's write waits for the job's row, held here; the signal does not need it.
        await lockWaitersReach(db.pool, { waiter: { app: `herald:worker:${process.pid}` }, holder: await pidOf(holder) });
        expect(await db.queue.signal(job.id, 'approve', { ok: true })).toEqual({ woken: false });
        await holder.query('COMMIT');
      } finally {
        await holder.end();
      }
      expect(await ended(job.id)).toMatchObject({ status: 'succeeded', result: { answer: { ok: true } } });
      expect(await types(job.id)).toContain('signalled');
    });
  });

  it('a timeout that commits while the signal waits wins, and the signal is refused', async () => {
    // Catches: sendSignal overwriting a timed-out row (ON CONFLICT DO UPDATE instead of DO NOTHING).
    const h = heldWait();
    await withWorker({ tasks: { approval: h.task } }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'approval', queue });
      await h.atWait;
      const holder = await holdSession();
      let sent: Promise<unknown>;
      try {
        await holder.query(`SELECT pg_advisory_xact_lock($1, ($2::bigint % 2147483647)::int)`, [SIGNAL_LOCK_NAMESPACE, job.id]);
        const signalPool = createPool(db.url, { max: 1, applicationName: 'durable-test:signal' });
        sent = new Queue(signalPool).signal(job.id, 'approve', { ok: true }).finally(() => signalPool.end());
        sent.catch(() => {});
        await lockWaitersReach(db.pool, { waiter: { app: 'durable-test:signal' }, holder: await pidOf(holder) });
        h.release();
        expect(await ended(job.id)).toMatchObject({ status: 'succeeded', result: { answer: null } });
        await holder.query('COMMIT');
      } finally {
        await holder.end();
      }
      await expect(sent).rejects.toMatchObject({ code: 'HERALD_SIGNAL_SENT', message: expect.stringMatching(/until its timeout/) });
      expect(await types(job.id)).not.toContain('signalled');
    });
  });
});

describe('examples/approval', () => {
  it('charges once, waits for the approval without a slot, then ships; a declined card fails at once', async () => {
    await withWorker({ tasks: { order }, concurrency: 1 }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'order', queue, payload: { orderId: 'A-1', cents: 4200 } });
      await hasEvent(job.id, 'waiting');
      expect(await db.queue.get(job.id)).toMatchObject({ waitingFor: 'signal', wait: { type: 'signal', name: 'approve' } });
      await db.queue.signal(job.id, 'approve', { approved: true, by: 'ann' });
      expect(await ended(job.id)).toMatchObject({
        status: 'succeeded',
        result: { order: 'A-1', shipped: true, receipt: 'rcpt-A-1', tracking: 'trk-A-1', approvedBy: 'ann' },
      });
      expect((await db.queue.steps(job.id)).map((s) => s.name)).toEqual(['charge', 'ship']);
      const { job: declined } = await db.queue.enqueue({ kind: 'order', queue, payload: { orderId: 'A-2', cents: 1, declined: true }, maxAttempts: 5 });
      expect(await ended(declined.id)).toMatchObject({ status: 'failed', attempt: 1, lastError: { message: 'card declined' } });
    });
  });
});

describe('ctx.invoke', () => {
  it('runs a child in the same queue on a one-slot worker, returns its result, and never enqueues it twice on replay', async () => {
    let childRuns = 0;
    const parent = async (p: { n: number }, ctx: TaskContext) => {
      const doubled = await ctx.invoke<number>('double', { n: p.n });
      if (ctx.job.attempt === 1) throw new Error('fail after the child, once');
      return doubled + 1;
    };
    const double = (p: { n: number }) => {
      childRuns++;
      return p.n * 2;
    };
    await withWorker({ tasks: { parent, double }, concurrency: 1 }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'parent', queue, payload: { n: 20 }, maxAttempts: 2 });
      expect(await ended(job.id)).toMatchObject({ status: 'succeeded', result: 41 });
      expect(childRuns).toBe(1);
      const { rows } = await db.pool.query(`SELECT id::text, status::text, invoked_by::text FROM herald.jobs WHERE invoked_by = $1`, [job.id]);
      expect(rows).toEqual([{ id: expect.any(String), status: 'succeeded', invoked_by: job.id }]);
      const waiting = (await db.queue.events(job.id)).find((e) => e.type === 'waiting');
      expect(waiting!.data).toEqual({ childId: rows[0].id });
    });
  });

  it("an invoked child joins its parent's flow: the flow lists it, and is not succeeded until it ends", async () => {
    // Catches: insertInvoked writing NULL for the child's flow_id instead of the parent's.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const childStarted = new Promise<void>((r) => (started = r));
    const parent = async (_p: unknown, ctx: TaskContext) => ctx.invoke<string>('ship', {});
    const ship = async () => {
      started();
      await released;
      return 'shipped';
    };
    await withWorker({ tasks: { parent, ship }, concurrency: 2 }, async (_w, queue) => {
      const { flow, jobs } = await db.queue.createFlow('order 7', [{ ref: 'order', job: { kind: 'parent', queue } }]);
      await childStarted;
      const running = (await db.queue.flow(flow.id))!;
      const child = running.jobs.find((j) => j.invokedBy === jobs[0].id);
      expect(child).toMatchObject({ kind: 'ship', status: 'running', flowId: flow.id });
      expect(running.flow.status).toBe('running');
      release();
      expect(await ended(jobs[0].id)).toMatchObject({ status: 'succeeded', result: 'shipped' });
      await waitFor(async () => (await db.queue.flow(flow.id))!.flow.status === 'succeeded', { what: 'the flow to succeed' });
    });
  });

  it('throws in the parent when the child fails', async () => {
    const parent = async (_p: unknown, ctx: TaskContext) => {
      try {
        await ctx.invoke('boom', {}, { maxAttempts: 1 });
        return 'no';
      } catch (err) {
        return (err as Error).message;
      }
    };
    const boom = () => {
      throw new Error('child broke');
    };
    await withWorker({ tasks: { parent, boom } }, async (_w, queue) => {
      const { job } = await db.queue.enqueue({ kind: 'parent', queue });
      const done = await ended(job.id);
      expect(done.status).toBe('succeeded');
      expect(done.result).toMatch(/^invoked job \d+ \(boom\) failed: child broke$/);
    });
  });
});

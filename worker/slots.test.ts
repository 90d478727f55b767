// Slot accounting without a database: free slots, backpressure from unwritten outcomes, which
// leases get renewed, and what the signal says.
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { byId } from '../queue/job.ts';
import { ClaimedJob } from '../queue/claimed.ts';
import { Slots } from './slots.ts';
import type { ActiveJob } from './active-job.ts';
import type { Task } from './tasks.ts';

const T = '2026-01-01 00:00:00+00';
// A claimed row (queue/claimed.ts's columns) of queue q, attempt 1 of 5.
const job = (id: string, kind = 'hold') =>
  new ClaimedJob([id, 'q', kind, {}, 0, 1, 5, null, null, null, null, null, T, T, T, null, T, '{}', null, null, null, null, null, '{}', null, null], 'w');
// A timer turn, then an immediate one: buffered jobs start a turn after a slot frees.
const tick = () => new Promise((r) => setTimeout(() => setImmediate(r), 0));

function harness(capacity: number, maxUnwritten: number, ahead = 0, admit = (jobs: ClaimedJob[]): Promise<boolean[] | null> => Promise.resolve(jobs.map(() => true))) {
  const outcomes: { id: string; ok: boolean; value: unknown; final?: boolean }[] = [];
  const refused: string[] = [];
  const release = new Map<string, (v: unknown) => void>();
  const hold: Task = (_p, ctx) => new Promise((resolve) => release.set(ctx.job.id, resolve));
  const slots = new Slots({
    capacity,
    maxUnwritten,
    ahead: () => ahead,
    worker: 'w',
    tasks: new Map([['hold', hold]]),
    logger: pino({ level: 'silent' }),
    progress: async () => {},
    succeeded: (a: ActiveJob, value) => outcomes.push({ id: a.job.id, ok: true, value }),
    failed: (a: ActiveJob, value, final) => outcomes.push({ id: a.job.id, ok: false, value, final }),
    freed: () => {},
    admit,
    refused: (leases) => refused.push(...leases.map((l) => l.id)),
  });
  return { slots, outcomes, release, refused };
}

describe('Slots', () => {
  // Catches: start() no longer calling pace.resume() when the worker held nothing, so the
  // claim-ahead of a worker that starts against a backlog grows only as fast as the time
  // before its first job is diluted away.
  it('restarts its pace when a job arrives at a worker that held none, and only then', async () => {
    const { slots, release } = harness(2, 10);
    let resumed = 0;
    const resume = slots.pace.resume.bind(slots.pace);
    slots.pace.resume = () => {
      resumed++;
      resume();
    };
    slots.start(job('1'));
    slots.start(job('2'));
    expect(resumed).toBe(1);
    release.get('1')!('done');
    await tick();
    slots.settled({ id: '1', attempt: 1 });
    slots.start(job('3')); // job 2 still held: the pace goes on
    expect(resumed).toBe(1);
  });

  it('frees a slot when a handler returns, but counts its outcome until it is written', async () => {
    const { slots, release } = harness(2, 1);
    slots.start(job('1'));
    slots.start(job('2'));
    expect(slots.free).toBe(0);
    release.get('1')!('done');
    await tick();
    // One slot is idle, but one outcome is unwritten and the cap is one: no claiming yet.
    expect(slots.free).toBe(0);
    slots.settled({ id: '1', attempt: 1 });
    expect(slots.free).toBe(1);
  });

  // Catches: leases() leaving out jobs whose outcome is being written (a write stuck on a cut
  // connection would let their leases run out).
  it('renews running, finished-but-unwritten and being-written jobs until their outcome is settled', async () => {
    const { slots, release } = harness(3, 10);
    for (const id of ['10', '9', '100']) slots.start(job(id));
    expect(slots.leases().map((l) => l.id)).toEqual(['9', '10', '100']); // numeric order
    release.get('9')!(1);
    await tick();
    slots.writing([{ id: '9', attempt: 1 }], true);
    expect(slots.leases().map((l) => l.id)).toEqual(['9', '10', '100']);
    slots.settled({ id: '9', attempt: 1 });
    expect(slots.leases().map((l) => l.id)).toEqual(['10', '100']);
  });

  // Catches: overdue() stopping jobs whose deadline has not come (`<=` -> `>=`), or renewed() not
  // moving a deadline (drop its assignment).
  it('stops the jobs past their local deadline, as lost, and a renewal or a cut moves deadlines', async () => {
    const { slots, outcomes } = harness(3, 10);
    slots.start(job('1'), 100);
    slots.start(job('2'), 100);
    slots.start(job('3'), 500);
    await tick();
    slots.renewed([{ id: '2', attempt: 1 }], 300);
    const stopped = slots.overdue(200, (l) => new Error(`late ${l.id}`));
    expect(stopped).toEqual([{ id: '1', attempt: 1 }]);
    expect(slots.leases().map((l) => l.id)).toEqual(['2', '3']);
    slots.cutShort(250);
    expect(slots.overdue(260, (l) => new Error(`late ${l.id}`)).map((l) => l.id)).toEqual(['2', '3']);
    await tick();
    expect(outcomes).toEqual([]); // a stopped job's outcome is never written
  });

  it('fails a job whose kind has no task, finally, naming the worker', async () => {
    const { slots, outcomes } = harness(1, 10);
    slots.start(job('1', 'nope'));
    await tick();
    expect(outcomes).toEqual([{ id: '1', ok: false, value: expect.objectContaining({ message: 'no task for kind "nope" on worker w' }), final: true }]);
  });

  it('a cancelled job ends as a failure with the cancel as its error, whatever the handler returned', async () => {
    const { slots, outcomes, release } = harness(1, 10);
    slots.start(job('1'));
    expect(slots.cancel({ id: '1', attempt: 1 })).toBe(true);
    release.get('1')!('partial result');
    await tick();
    expect(outcomes).toEqual([{ id: '1', ok: false, value: expect.objectContaining({ name: 'JobCancelledError' }), final: false }]);
  });

  it('a signal first read after the cancel is already aborted; one read before fires', async () => {
    const { slots } = harness(2, 10);
    const signals = new Map<string, () => AbortSignal>();
    const opts = (slots as unknown as { opts: { tasks: Map<string, Task> } }).opts;
    opts.tasks.set('late', (_p, ctx) => new Promise(() => signals.set(ctx.job.id, () => ctx.signal)));
    slots.start(job('1', 'late'));
    slots.start(job('2', 'late'));
    await tick();
    const early = signals.get('2')!();
    const fired: unknown[] = [];
    early.addEventListener('abort', () => fired.push(early.reason));
    expect(early.aborted).toBe(false);
    expect(slots.cancel({ id: '1', attempt: 1 })).toBe(true);
    expect(slots.cancel({ id: '2', attempt: 1 })).toBe(true);
    expect(slots.cancel({ id: '2', attempt: 1 })).toBe(false); // once
    const late = signals.get('1')!();
    expect(late.aborted).toBe(true);
    expect(late.reason).toMatchObject({ name: 'JobCancelledError' });
    expect(signals.get('1')!()).toBe(late);
    expect(fired).toEqual([expect.objectContaining({ name: 'JobCancelledError' })]);
    // The first reason stands: a later abandon does not change what the handler sees.
    expect(slots.abandon({ id: '1', attempt: 1 }, new Error('lost'))).toBe(true);
    expect(late.reason).toMatchObject({ name: 'JobCancelledError' });
  });

  it('an abandoned job is forgotten at once and its outcome never reported', async () => {
    const { slots, outcomes, release } = harness(1, 10);
    slots.start(job('1'));
    expect(slots.abandon({ id: '1', attempt: 1 }, new Error('lost'))).toBe(true);
    expect(slots.leases()).toEqual([]);
    expect(slots.free).toBe(0); // the handler still runs: it keeps its slot until it returns
    release.get('1')!('stale');
    await tick();
    expect(outcomes).toEqual([]);
    expect(slots.free).toBe(1);
  });

  it('buffers jobs claimed beyond its slots, renews them, and starts each as a slot frees', async () => {
    const started: string[] = [];
    const { slots, release } = harness(1, 10, 2);
    expect(slots.free).toBe(3); // one slot + two ahead
    for (const id of ['1', '2', '3']) slots.start(job(id));
    await tick();
    for (const id of release.keys()) started.push(id);
    expect(started).toEqual(['1']);
    expect(slots.buffered).toBe(2);
    expect(slots.leases().map((l) => l.id)).toEqual(['1', '2', '3']); // buffered leases are renewed too
    release.get('1')!('done');
    await tick();
    expect([...release.keys()]).toEqual(['1', '2']); // the next in claim order runs, no claim needed
    expect(slots.buffered).toBe(1);
  });

  it('refills its buffer when half of it has drained, not after every job', async () => {
    const { slots, release } = harness(1, 10, 3);
    for (const id of ['1', '2', '3', '4']) slots.start(job(id));
    expect(slots.free).toBe(0);
    release.get('1')!(1);
    await tick();
    slots.settled({ id: '1', attempt: 1 });
    expect(slots.free).toBe(0); // one of four places free: wait
    release.get('2')!(2);
    await tick();
    slots.settled({ id: '2', attempt: 1 });
    expect(slots.free).toBe(2); // half free: claim
  });

  it('a cancelled buffered job never runs and ends cancelled; buffered jobs can be handed back', async () => {
    const { slots, outcomes, release } = harness(1, 10, 3);
    for (const id of ['1', '2', '3', '4']) slots.start(job(id));
    expect(slots.cancel({ id: '3', attempt: 1 })).toBe(true);
    expect(outcomes).toEqual([{ id: '3', ok: false, value: expect.objectContaining({ name: 'JobCancelledError' }), final: false }]);
    expect(slots.takeBuffered().map((l) => l.id)).toEqual(['2', '4']);
    expect(slots.buffered).toBe(0);
    expect(slots.leases().map((l) => l.id)).toEqual(['1', '3']); // the running one, and the cancel being written
    release.get('1')!('done');
    await tick();
    expect([...release.keys()]).toEqual(['1']); // nothing handed back ever starts
    // Only buffered jobs older than the TTL go back.
    slots.start(job('5'));
    slots.start(job('6'));
    expect(slots.takeBuffered(60_000)).toEqual([]);
    expect(slots.takeBuffered(0)).toEqual([{ id: '6', attempt: 1 }]);
  });

  it('a buffered job starts only once the check says it may; refused ones are handed back, never run', async () => {
    let answer: (ok: boolean[] | null) => void = () => {};
    const asked: string[][] = [];
    const admit = (jobs: ClaimedJob[]) => {
      asked.push(jobs.map((j) => j.id));
      return new Promise<boolean[] | null>((r) => (answer = r));
    };
    const { slots, release, refused, outcomes } = harness(1, 10, 3, admit);
    for (const id of ['1', '2', '3', '4']) slots.start(job(id)); // 1 runs at once: its claim was the check
    release.get('1')!('done');
    await tick();
    expect(asked).toEqual([['2']]);
    expect([...release.keys()]).toEqual(['1']); // not before the answer
    expect(slots.free).toBe(0); // its slot is reserved meanwhile
    answer([false]);
    await tick();
    expect(refused).toEqual(['2']);
    expect(asked).toEqual([['2'], ['3']]);
    // A cancel while it is being checked ends it cancelled, whatever the answer; it never runs.
    expect(slots.cancel({ id: '3', attempt: 1 })).toBe(true);
    answer([true]);
    await tick();
    expect(asked).toEqual([['2'], ['3'], ['4']]);
    answer([true]);
    await tick();
    expect([...release.keys()]).toEqual(['1', '4']);
    expect(outcomes.map((o) => o.id)).toEqual(['1', '3']);
  });

  it('slots that free together share one start check', async () => {
    const asked: string[][] = [];
    const admit = (jobs: ClaimedJob[]) => {
      asked.push(jobs.map((j) => j.id));
      return Promise.resolve(jobs.map(() => true));
    };
    const { slots, release } = harness(2, 10, 4, admit);
    for (const id of ['1', '2', '3', '4', '5', '6']) slots.start(job(id));
    release.get('1')!('done');
    release.get('2')!('done');
    await tick();
    expect(asked).toEqual([['3', '4']]);
    expect([...release.keys()]).toEqual(['1', '2', '3', '4']);
  });

  it('orders ids numerically', () => {
    expect(['10', '9', '100', '11'].map((id) => ({ id })).sort(byId).map((x) => x.id)).toEqual(['9', '10', '11', '100']);
  });
  // Catches: the context's methods put on its prototype unbound (HandlerContext's getters made
  // plain methods): a handler that destructures them calls them without `this`.
  it('hands a handler a context it may destructure: methods keep their job, getters read it', async () => {
    const reports: [string, number][] = [];
    const seen: unknown[] = [];
    // eslint-disable-next-line @typescript-eslint/unbound-method -- unbound on purpose: what this test is about
    const destructure: Task = async (_p, { job, signal, log, parents, progress }) => {
      seen.push(job.id, signal.aborted, typeof log.info, parents);
      await progress(40);
    };
    const slots = new Slots({
      capacity: 1,
      maxUnwritten: 10,
      worker: 'w',
      tasks: new Map([['destructure', destructure]]),
      logger: pino({ level: 'silent' }),
      progress: async (a, percent) => void reports.push([a.job.id, percent]),
      progressEveryMs: 0,
      succeeded: () => {},
      failed: (_a, err) => seen.push(err),
      freed: () => {},
      admit: (jobs) => Promise.resolve(jobs.map(() => true)),
      refused: () => {},
    });
    slots.start(job('7', 'destructure'));
    await tick();
    expect(seen).toEqual(['7', false, 'function', []]);
    expect(reports).toEqual([['7', 40]]);
  });
});

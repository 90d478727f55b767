// Durable handlers: what a run reads and writes (worker/durable.ts holds the replay), the
// signals producers send, and a job's steps as the API shows them.
import { ConflictError, NotFoundError } from '../errors.ts';
import { WAIT_FOREVER_MS } from '../defaults.ts';
import type { JobWait } from '../schema/index.ts';
import type { Actor } from '../schema/index.ts';
import {
  insertInvoked, listSteps, waitingCounts, loadRecords, lockForSignal, lockHeld, readChild, readSignal, saveRecord, saveSteps,
  sendSignal, suspendJob, timeOutSignal, type RecordRow,
} from '../sql/durable.ts';
import type { JobStatus } from '../schema/index.ts';
import type { Db } from './db.ts';
import type { DurableWait } from '../search.ts';
import { toRecord, type EnqueueInput } from './insert.ts';
import type { Lease } from './work.ts';

export type { RecordRow };

/** A step as GET /api/jobs/:id/steps shows it. */
export interface Step {
  name: string;
  occurrence: number;
  attempt: number;
  startedAt: string;
  finishedAt: string;
  ms: number;
  result: unknown;
}

/** A finished step to store: its run's lease, its name and occurrence, its result's JSON, its duration. */
export interface StepWrite {
  lease: Lease;
  name: string;
  occurrence: number;
  json: string;
  ms: number;
}

/** A signal as a run finds it: its payload, or a wait that timed out. */
export interface SignalValue {
  payload: unknown;
  timedOut: boolean;
}

/** An invoked job that ended. */
export interface ChildEnd {
  status: JobStatus;
  result: unknown;
  error: string | null;
}

/** Where a run stops: its wait, and what to store with it. */
export interface Suspension {
  wait: JobWait;
  /** A record to store with the wait (a sleep's or wait's deadline, an invoke's child id). */
  record?: { type: 'sleep' | 'wait' | 'invoke'; name: string; occurrence: number; result: Record<string, unknown> };
  /** ctx.invoke's first call: the job to enqueue; its id goes into wait.childId and the record. */
  invoke?: EnqueueInput;
}

/** What became of a suspension: the run stopped, or what it waits for is already there. */
export type SuspendResult =
  | { kind: 'suspended'; status: JobStatus }
  | { kind: 'signal'; signal: SignalValue }
  | { kind: 'child'; child: ChildEnd }
  | { kind: 'lost' };

const ENDED: JobStatus[] = ['succeeded', 'failed', 'cancelled'];

export class DurableService {
  constructor(private readonly db: Db) {}

  /** Every record and signal of the job (the run's first durable call). */
  async load(worker: string, lease: Lease): Promise<RecordRow[]> {
    return (await this.db.run(loadRecords, [lease.id, lease.attempt, worker])).rows;
  }

  /** Stores finished steps of `worker`'s runs in one statement; for each, whether its lease still held. */
  async saveSteps(worker: string, steps: readonly StepWrite[]): Promise<boolean[]> {
    const { rows } = await this.db.run(saveSteps, [
      steps.map((s) => s.lease.id), steps.map((s) => s.lease.attempt), worker, steps.map((s) => s.name),
      steps.map((s) => s.occurrence), steps.map((s) => s.json), steps.map((s) => s.ms),
    ]);
    return rows.map((r) => r.held);
  }

  /**
   * Ends the run to wait, unless what it waits for is already there: in one transaction that
   * holds the job's row, so a signal or the child's end either came first and is returned, or
   * comes after and finds the job waiting.
   */
  suspend(worker: string, lease: Lease, s: Suspension): Promise<SuspendResult> {
    return this.db.transaction(async (c) => {
      const held = await this.db.run(lockHeld, [lease.id, lease.attempt, worker, s.wait.type === 'signal'], c);
      if (held.rowCount === 0) return { kind: 'lost' };
      const { wait } = s;
      if (wait.type === 'signal' && wait.name !== undefined) {
        const { rows } = await this.db.run(readSignal, [lease.id, wait.name], c);
        if (rows[0]) return { kind: 'signal', signal: { payload: rows[0].payload, timedOut: rows[0].timed_out } };
      }
      if (wait.type === 'child' && wait.childId !== undefined) {
        const { rows } = await this.db.run(readChild, [wait.childId], c);
        const child = rows[0];
        if (!child) return { kind: 'child', child: { status: 'cancelled', result: null, error: `invoked job ${wait.childId} was deleted` } };
        if (ENDED.includes(child.status)) {
          return { kind: 'child', child: { status: child.status, result: child.result ?? null, error: child.last_error?.message ?? null } };
        }
      }
      let record = s.record;
      if (s.invoke) {
        const { rows } = await this.db.run(insertInvoked, [JSON.stringify(toRecord(s.invoke)), lease.id], c);
        wait.childId = rows[0].id;
        if (record) record = { ...record, result: { childId: rows[0].id } };
      }
      if (record) {
        await this.db.run(saveRecord, [lease.id, lease.attempt, record.type, record.name, record.occurrence, JSON.stringify(record.result)], c);
      }
      const until = wait.until ?? new Date(Date.now() + WAIT_FOREVER_MS).toISOString();
      const { rows } = await this.db.run(suspendJob, [lease.id, lease.attempt, worker, until, JSON.stringify(wait)], c);
      return { kind: 'suspended', status: rows[0].status };
    });
  }

  /** A wait past its deadline: the timeout is stored unless a signal came first (returned then). */
  async timeOut(worker: string, lease: Lease, name: string): Promise<SignalValue | null> {
    const { rows } = await this.db.run(timeOutSignal, [lease.id, lease.attempt, worker, name]);
    if (rows[0].held === 0) return null;
    if (rows[0].stored > 0) return { payload: null, timedOut: true };
    const found = await this.db.run(readSignal, [lease.id, name]);
    return { payload: found.rows[0]?.payload ?? null, timedOut: found.rows[0]?.timed_out ?? true };
  }

  /**
   * Sends signal `name` to a job (POST /api/jobs/:id/signals/:name): kept until the job waits for
   * it, or wakes it now if it does. One value per job and name.
   */
  signal(jobId: string, name: string, payload: unknown, actor?: Actor): Promise<{ woken: boolean }> {
    return this.db.transaction(async (c) => {
      const { rows } = await this.db.run(lockForSignal, [jobId], c);
      if (!rows[0]) throw new NotFoundError(`job ${jobId} does not exist`);
      if (ENDED.includes(rows[0].status)) {
        throw new ConflictError(`job ${jobId} has ended (${rows[0].status}): it can wait for no signal`, 'HERALD_SIGNAL_SENT');
      }
      const sent = (await this.db.run(sendSignal, [jobId, name, payload === undefined ? null : JSON.stringify(payload)], c)).rows[0];
      if (sent.stored === 0) {
        throw new ConflictError(
          sent.timed_out
            ? `job ${jobId} waited for signal "${name}" until its timeout and went on without it`
            : `job ${jobId} already holds a signal "${name}"; a job takes one value per name`,
          'HERALD_SIGNAL_SENT',
        );
      }
      await this.db.stamp(actor, c);
      return { woken: sent.woken > 0 };
    });
  }

  /** How many jobs sleep or wait, by queue and wait (queues where none does are left out). */
  async waiting(): Promise<{ queue: string; waitingFor: DurableWait; jobs: number }[]> {
    return (await this.db.run(waitingCounts, [])).rows.map((r) => ({ queue: r.queue, waitingFor: r.waiting_for, jobs: r.n }));
  }

  /** A job's steps in the order they finished; null when the job does not exist. */
  async steps(jobId: string): Promise<Step[]> {
    const { rows } = await this.db.run(listSteps, [jobId]);
    return rows.map((r) => ({
      name: r.name,
      occurrence: r.occurrence,
      attempt: r.attempt,
      startedAt: r.started_at.toISOString(),
      finishedAt: r.finished_at.toISOString(),
      ms: r.finished_at.getTime() - r.started_at.getTime(),
      result: r.result ?? null,
    }));
  }
}

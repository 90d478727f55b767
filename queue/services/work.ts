// Working: claim, lease renewal, progress, outcomes and release. Every write is fenced on id,
// attempt, worker and status, so a worker that lost a job writes nothing for it.
import { ValidationError } from '../errors.ts';
import { byId, toJob, type Job } from '../job.ts';
import { ClaimedJob, type ClaimedRow } from '../claimed.ts';
import { claimJobs, nextRunAt, type ClaimParams } from '../sql/claim.ts';
import { claimLimited, lockQueueSettings, rateFreeAt } from '../sql/claim-limited.ts';
import { completeJobs, failJobs, releaseJobs, renewLeases, reportProgress } from '../sql/lease.ts';
import { heldQueueSettings, startGate } from '../sql/settings.ts';
import { countedQueues, passWakeBarriers } from '../sql/wake.ts';
import { JOBS_CHANNEL, wakeTarget } from '../channels.ts';
import { DEFAULTS } from '../defaults.ts';
import type { Executor, Result, Statement } from '../sql/statement.ts';
import type { Db } from './db.ts';
import { toSettings, type QueueSettings } from './settings.ts';

/** What a worker holds: a job at one attempt. Every write names both. */
export interface Lease {
  id: string;
  attempt: number;
}

export interface ClaimRequest {
  worker: string;
  /** Queues to take from; undefined or empty = all. */
  queues?: string[];
  capabilities?: string[];
  /** Kinds to take (the worker's tasks); undefined = any. */
  kinds?: string[];
  limit: number;
  leaseMs?: number;
  /** The liveness lock key the worker holds on its listener session, if any. */
  ownerLock?: number | null;
}

export interface ErrorInfo {
  message: string;
  name?: string;
  stack?: string;
  /** The durable step (ctx.step) whose work threw it. */
  step?: string;
  [k: string]: unknown;
}

const MAX_MESSAGE = 4_000;
const MAX_STACK = 16_000;

/** An Error (or anything thrown) as the JSON kept in last_error, truncated; `step`: the durable step whose work threw it. */
export function toErrorInfo(err: unknown, step?: string): ErrorInfo {
  const where = step === undefined ? {} : { step };
  if (err instanceof Error) {
    return {
      name: err.name,
      message: String(err.message).slice(0, MAX_MESSAGE),
      ...(err.stack ? { stack: err.stack.slice(0, MAX_STACK) } : {}),
      ...where,
    };
  }
  return { message: String(typeof err === 'string' ? err : JSON.stringify(err) ?? err).slice(0, MAX_MESSAGE), ...where };
}

/** Claim order: priority, then id (a claim's RETURNING has no order). */
const byPriority = (a: { priority: number; id: string }, b: { priority: number; id: string }) => b.priority - a.priority || byId(a, b);

function lost(sent: Lease[], returned: { id: string }[]): string[] {
  // Each returned row is a distinct job of the batch: as many as sent means none was lost.
  if (returned.length === sent.length) return [];
  const kept = new Set(returned.map((r) => r.id));
  return sent.filter((s) => !kept.has(s.id)).map((s) => s.id);
}

export class WorkService {
  constructor(private readonly db: Db) {}

  /**
   * After herald_jobs notifications of `queues`, before the claim they ask for: waits for the
   * transactions that committed alongside their senders and skipped their own (sql/wake.ts), so
   * the claim sees their jobs. False: gave up waiting (the poll finds what is left).
   */
  async passQueueBarriers(queues: string[], db: Executor = this.db.pool): Promise<boolean> {
    const targets = queues.map((q) => wakeTarget(JOBS_CHANNEL, q));
    const { rows } = await this.db.run(passWakeBarriers, [targets, DEFAULTS.wakeBarrierTimeoutMs], db);
    return rows[0].passed;
  }

  /** The queues whose barriers a listener passes after it (re)connects (sql/wake.ts). */
  async countedQueues(): Promise<string[]> {
    return (await this.db.run(countedQueues, [])).rows.map((r) => r.queue);
  }

  async claim(req: ClaimRequest, db: Executor = this.db.pool): Promise<Job[]> {
    return (await this.db.run(claimJobs.rows, claimParams(queuesOf(req), req, this.db.leaseMs), db)).rows.map(toJob).sort(byPriority);
  }

  /** The claim as a worker makes it: jobs to run (the whole Job is built when a handler reads it). */
  async claimToRun(req: ClaimRequest, db: Executor = this.db.pool): Promise<ClaimedJob[]> {
    return claimed(await this.db.run(claimJobs.claimed, claimParams(queuesOf(req), req, this.db.leaseMs), db), req.worker);
  }

  /**
   * passQueueBarriers(`queues`), then the claim, in one round trip when the pool's connections
   * pipeline (createPool's `pipeline`): both are written at once on one connection, and the
   * server runs the claim only once the barrier's statement has ended, so the claim's snapshot
   * still follows it. `barrier`: what passQueueBarriers would have returned, or its error (the
   * claim ran all the same: its jobs are ours).
   */
  async claimAfterBarriers(queues: string[], req: ClaimRequest): Promise<{ jobs: ClaimedJob[]; barrier: boolean | Error }> {
    if (queues.length === 0) return { jobs: await this.claimToRun(req), barrier: true };
    const client = await this.db.pool.connect();
    let broken: Error | undefined;
    try {
      // Written to the connection at once (before its first await), ahead of the claim.
      const passing = this.passQueueBarriers(queues, client).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
      // Without pipelining, the claim must not be queued behind a barrier that failed.
      const early = (client as { pipeline?: boolean }).pipeline ? undefined : await passing;
      if (early instanceof Error) return { jobs: [], barrier: early };
      const jobs = await this.claimToRun(req, client).catch((err: Error) => Promise.reject((broken = err)));
      return { jobs, barrier: await passing };
    } finally {
      // As pool.query does: a connection that failed a statement is not reused.
      client.release(broken);
    }
  }

  /**
   * The claim of one queue that has settings: in a transaction that first locks the queue's
   * settings row, so claims of this queue take turns and each sees the slots the last one took
   * (sql/claim-limited.ts). `retryAt`: when a full rate window next lets a job start.
   */
  claimLimited(queue: string, req: Omit<ClaimRequest, 'queues'>): Promise<{ jobs: Job[]; retryAt: Date | null }> {
    return this.limited(queue, req, claimLimited.rows, (r) => r.rows.map(toJob).sort(byPriority));
  }

  /** claimLimited as a worker makes it (see claimToRun). */
  claimLimitedToRun(queue: string, req: Omit<ClaimRequest, 'queues'>): Promise<{ jobs: ClaimedJob[]; retryAt: Date | null }> {
    return this.limited(queue, req, claimLimited.claimed, (r) => claimed(r, req.worker));
  }

  private limited<Row, J>(
    queue: string,
    req: Omit<ClaimRequest, 'queues'>,
    st: Statement<ClaimParams<string>, Row>,
    jobs: (r: Result<Row>) => J[],
  ): Promise<{ jobs: J[]; retryAt: Date | null }> {
    const { db } = this;
    return db.transaction(async (c) => {
      const locked = await db.run(lockQueueSettings, [queue], c);
      if (locked.rows.length === 0) return { jobs: [], retryAt: null };
      const r = await db.run(st, claimParams(queue, req, db.leaseMs), c);
      let retryAt: Date | null = null;
      if (r.rows.length < req.limit) {
        const free = await db.run(rateFreeAt, [queue], c);
        if (free.rows[0]?.at_ms != null) retryAt = new Date(free.rows[0].at_ms);
      }
      return { jobs: jobs(r), retryAt };
    });
  }

  /**
   * The settings of every queue that is paused or limited (the plain claim leaves those alone),
   * each marked `parked` when it is a dead-letter queue.
   */
  async heldQueues(): Promise<(QueueSettings & { queue: string; parked: boolean })[]> {
    return (await this.db.run(heldQueueSettings, [])).rows.map((r) => ({ ...toSettings(r), parked: r.parked }));
  }

  /** The held queues and the database's clock, read now: what a claimed-ahead job must pass to start. */
  async startGate(): Promise<{ held: string[]; now: Date }> {
    return (await this.db.run(startGate, [])).rows[0];
  }

  /**
   * When the next scheduled job for these queues becomes runnable, or null. `sinceMs` also counts
   * jobs that became runnable up to that long ago (their time is past): those a claim that began
   * then may have missed.
   */
  async nextRunAt(queues?: string[], capabilities: string[] = [], kinds?: string[], sinceMs = 0): Promise<Date | null> {
    const { rows } = await this.db.run(nextRunAt, [queues?.length ? queues : null, capabilities, kinds ?? null, sinceMs]);
    return rows[0]?.at_ms == null ? null : new Date(rows[0].at_ms);
  }

  /**
   * Renews leases and records `ownerLock` (the liveness key the worker holds now, null without
   * one) as their owner; returns the ones still held, and which of those were asked to cancel.
   */
  async heartbeat(
    worker: string,
    leases: Lease[],
    leaseMs = this.db.leaseMs,
    ownerLock: number | null = null,
  ): Promise<{ held: Set<string>; cancelRequested: Set<string> }> {
    const held = new Set<string>();
    const cancelRequested = new Set<string>();
    if (leases.length === 0) return { held, cancelRequested };
    const { rows } = await this.db.run(renewLeases, [leases.map((l) => l.id), leases.map((l) => l.attempt), worker, leaseMs, ownerLock]);
    for (const r of rows) {
      held.add(r.id);
      if (r.cancel_requested) cancelRequested.add(r.id);
    }
    return { held, cancelRequested };
  }

  /** Reports progress (0..100). Returns false when the lease was lost. */
  async progress(worker: string, lease: Lease, percent: number, message: string | null = null): Promise<{ held: boolean; cancelRequested: boolean }> {
    checkPercent(percent);
    const { rows } = await this.db.run(reportProgress, [lease.id, lease.attempt, worker, percent, message, this.db.leaseMs]);
    return { held: rows.length === 1, cancelRequested: rows[0]?.cancel_requested ?? false };
  }

  /** Marks jobs succeeded; returns the ids whose lease was lost (nothing was written for them). */
  complete(worker: string, done: (Lease & { result: unknown })[]): Promise<string[]> {
    return this.completeJson(worker, done, done.map((d) => JSON.stringify(d.result ?? null)));
  }

  /** complete(), each result given as its JSON text (`results[i]` is `leases[i]`'s). */
  async completeJson(worker: string, leases: Lease[], results: string[]): Promise<string[]> {
    if (leases.length === 0) return [];
    const { rows } = await this.db.run(completeJobs, [leases.map((l) => l.id), leases.map((l) => l.attempt), worker, results]);
    return lost(leases, rows);
  }

  /**
   * Records failed attempts: each retries after backoff, or fails when out of attempts (or
   * at once when `final`), or becomes cancelled if a cancel was requested. Returns lost ids.
   */
  async fail(worker: string, failed: (Lease & { error: unknown; final?: boolean; step?: string })[]): Promise<string[]> {
    if (failed.length === 0) return [];
    const { rows } = await this.db.run(failJobs, [
      failed.map((f) => f.id),
      failed.map((f) => f.attempt),
      worker,
      this.db.backoffBaseMs,
      this.db.backoffMaxMs,
      failed.map((f) => JSON.stringify(toErrorInfo(f.error, f.step))),
      failed.map((f) => !!f.final),
    ]);
    return lost(failed, rows);
  }

  /** Hands jobs back to the queue without using up their attempt (graceful shutdown). */
  async release(worker: string, leases: Lease[]): Promise<string[]> {
    if (leases.length === 0) return [];
    const { rows } = await this.db.run(releaseJobs, [leases.map((l) => l.id), leases.map((l) => l.attempt), worker]);
    return lost(leases, rows);
  }
}

/** A claim's parameters: `scope` is the worker's queues (NULL = all) or claimLimited's queue. */
function claimParams<Scope>(scope: Scope, req: Omit<ClaimRequest, 'queues'>, leaseMs: number): ClaimParams<Scope> {
  return [scope, req.capabilities ?? [], req.limit, req.worker, req.ownerLock ?? null, req.leaseMs ?? leaseMs, req.kinds ?? null];
}

const queuesOf = (req: ClaimRequest) => (req.queues?.length ? req.queues : null);

function claimed(r: Result<ClaimedRow>, worker: string): ClaimedJob[] {
  return r.rows.map((row) => new ClaimedJob(row, worker)).sort(byPriority);
}

/** A progress report's percent is 0..100 (the database's check says the same). */
export function checkPercent(percent: number): void {
  if (!Number.isFinite(percent) || percent < 0 || percent > 100) throw new ValidationError('progress percent must be a number from 0 to 100');
}

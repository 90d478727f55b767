// The core API that the server, the worker and in-process producers share. Each method is
// one statement from queue/sql/ (or one short transaction); no SQL is written anywhere else.
import type pg from 'pg';
import { ConflictError, NotFoundError, ValidationError, fromPgError } from './errors.ts';
import { inTransaction } from './database.ts';
import { toEvent, toJob, type Job, type JobEvent } from './job.ts';
import { START, type Cursor } from './cursor.ts';
import type { Actor, JobStatus } from './schema.ts';
import { DEFAULTS, MAX_ATTEMPTS_LIMIT } from './defaults.ts';
import { StatementRunner, type Executor, type Result, type Statement } from './sql/statement.ts';
import { enqueueJobs, jobsByIdempotencyKey, type EnqueueRecord } from './sql/enqueue.ts';
import { claimJobs, nextRunAt } from './sql/claim.ts';
import { completeJobs, failJobs, releaseJobs, renewLeases, reportProgress } from './sql/lease.ts';
import { cancelJob, retryJob, stampActor } from './sql/admin.ts';
import { bulkStatements, countJobs, listJobs, windowFloor, type BulkAction } from './sql/search.ts';
import { lockHistory, pruneHistory, readHistory, recordDepth, rollupEvents } from './sql/history.ts';
import { HISTORY_RANGES, rangeStart, toBuckets, type HistoryBucket, type HistoryRange } from './history.ts';
import { filterValues, isSearch, type JobFilter } from './search.ts';
import { reapJobs } from './sql/reap.ts';
import { deleteFinishedJobs } from './sql/cleanup.ts';
import { feedHead, jobEvents, readFeed, readFeedThrough } from './sql/feed.ts';
import { otherDatabaseXids } from './sql/horizon.ts';
import { feedHeldBack, feedHolder } from './sql/feed-backlog.ts';
import { getJob, queueCounts, tableStats } from './sql/reads.ts';
import { claimLimited, lockQueueSettings, rateFreeAt } from './sql/claim-limited.ts';
import { heldQueueSettings, patchQueueSettings, pruneQueueStarts, type QueueSettingsRow } from './sql/settings.ts';
import { expireJobs } from './sql/expire.ts';
import { listWorkers, pruneDeadWorkers, registerWorker, touchWorker, unregisterWorker } from './sql/workers.ts';
import {
  deleteSchedule, dueSchedules, listSchedules, lockSchedule, markScheduleRun, nextScheduleDue, putSchedule, schedulerTurn,
  type ScheduleRow,
} from './sql/schedules.ts';
import { latestTick, nextTick, parseCron } from './cron.ts';
import { Flows } from './flows.ts';
import type { OnParentFailure } from './job.ts';

export interface EnqueueInput {
  kind: string;
  queue?: string;
  payload?: unknown;
  priority?: number;
  runAt?: string | Date;
  maxAttempts?: number;
  requires?: string[];
  idempotencyKey?: string | null;
  /** The key of per-group limits (a tenant, a customer). */
  group?: string | null;
  /** Labels to filter by (at most 16). */
  tags?: string[];
  /** An attempt running longer than this fails (1 to 86400000). */
  timeoutMs?: number | null;
  /** A job still queued at this time never starts: it becomes cancelled (event 'expired'). */
  expireAt?: string | Date | null;
  /** Existing job ids it waits for (it is blocked until they end; see queue/flows.ts). */
  dependsOn?: string[];
  /** What a parent's failure does: 'cancel' (default) or 'run'. */
  onParentFailure?: OnParentFailure;
}

export interface Enqueued {
  job: Job;
  /** False when an idempotency key returned the job it made before. */
  created: boolean;
}

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
  [k: string]: unknown;
}

export type { Actor };

export interface ListOptions {
  before?: string;
  limit?: number;
  /**
   * Jobs a search looks at per page (DEFAULTS.searchWindow). A page that ends at the window says
   * so, and its `next` continues below it, so every job stays reachable at a bounded cost.
   */
  window?: number;
}

export interface JobPage {
  jobs: Job[];
  /** Pass back as `before` for the next page; null on the last one. */
  next: string | null;
  /**
   * Present when the page was cut short by the search window: that many jobs were looked at,
   * and `next` continues below them.
   */
  searched?: number;
}

export interface BulkResult {
  matched: number;
  affected?: number;
}

export interface QueueOptions {
  leaseMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

/** The open transaction the event feed waits for (see sql/horizon.ts). */
export interface FeedHolder {
  /** Its transaction id. */
  xid: string;
  /** Its session; null for a prepared transaction, or a session that could not be named. */
  pid: number | null;
  applicationName: string | null;
  /** pg_stat_activity's state ('idle in transaction', 'active', ...), or 'prepared'. */
  state: string | null;
  /** A prepared transaction's name. */
  gid: string | null;
  transactionStart: string | null;
  queryStart: string | null;
  /** How long its transaction has been open (or prepared), in ms. */
  ageMs: number | null;
}

export interface QueueCount {
  queue: string;
  queued: number;
  scheduled: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  /** Waiting for their parents (workflows): neither queued nor running for the queue's limits. */
  blocked: number;
}

interface RateLimit {
  count: number;
  periodMs: number;
}

/** A queue's settings (PATCH /api/queues/:queue). Null: no such limit. */
export interface QueueSettings {
  paused: boolean;
  concurrency: number | null;
  groupConcurrency: number | null;
  rateLimit: RateLimit | null;
}

/** A queue's entry in GET /api/queues: its counts, its settings and their last change. */
export type QueueInfo = QueueCount & QueueSettings & {
  /** Who last changed the settings; null when never changed, or not recorded (older rows, core API without an actor). */
  updatedBy: Actor | null;
  /** When the settings last changed (ISO); null for a queue that never had settings. */
  updatedAt: string | null;
};

/** A PATCH: an absent key keeps the setting, null clears a limit. */
export type QueueSettingsPatch = Partial<QueueSettings>;

/** What a worker tells the registry about itself. */
export interface WorkerRegistration {
  id: string;
  host: string;
  pid: number;
  /** Null: every queue. */
  queues: string[] | null;
  kinds: string[];
  capabilities: string[];
  concurrency: number;
  lockKey: number | null;
}

/** A worker in GET /api/workers. Registry fields are null for a holder of jobs that never registered. */
export interface WorkerInfo {
  worker: string;
  host: string | null;
  pid: number | null;
  queues: string[] | null;
  kinds: string[] | null;
  capabilities: string[] | null;
  concurrency: number | null;
  running: number;
  startedAt: string | null;
  lastSeenAt: string | null;
  /** When its oldest running job started; null when idle. */
  since: string | null;
  jobs: string[];
}

/** The job a schedule makes each tick: an enqueue body without idempotencyKey. */
type ScheduleJob = Omit<EnqueueInput, 'idempotencyKey'>;

export interface ScheduleInput {
  cron: string;
  /** IANA name; default UTC. */
  timezone?: string;
  job: ScheduleJob;
  paused?: boolean;
}

export interface Schedule {
  name: string;
  cron: string;
  timezone: string;
  job: ScheduleJob;
  paused: boolean;
  /** The next tick that will make a job; null while paused. */
  nextRunAt: string | null;
  lastRunAt: string | null;
  lastJobId: string | null;
}

const toSchedule = (r: ScheduleRow): Schedule => ({
  name: r.name,
  cron: r.cron,
  timezone: r.timezone,
  job: r.job as unknown as ScheduleJob,
  paused: r.paused,
  nextRunAt: r.next_run_at?.toISOString() ?? null,
  lastRunAt: r.last_run_at?.toISOString() ?? null,
  lastJobId: r.last_job_id,
});

function toSettings(r: QueueSettingsRow): QueueSettings & { queue: string } {
  return {
    queue: r.queue,
    paused: r.paused ?? false,
    concurrency: r.concurrency ?? null,
    groupConcurrency: r.group_concurrency ?? null,
    rateLimit: r.rate_count === null || r.rate_period_ms === null ? null : { count: r.rate_count, periodMs: r.rate_period_ms },
  };
}

const MAX_MESSAGE = 4_000;
const MAX_STACK = 16_000;

/** An Error (or anything thrown) as the JSON kept in last_error, truncated. */
export function toErrorInfo(err: unknown): ErrorInfo {
  if (err instanceof Error) {
    return {
      name: err.name,
      message: String(err.message).slice(0, MAX_MESSAGE),
      ...(err.stack ? { stack: err.stack.slice(0, MAX_STACK) } : {}),
    };
  }
  return { message: String(typeof err === 'string' ? err : JSON.stringify(err) ?? err).slice(0, MAX_MESSAGE) };
}

// Key order does not matter for "the same payload".
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

/** Coalesced enqueue statements in flight at once (see Queue.enqueue). */
const ENQUEUE_FLUSHES = 4;

interface PendingEnqueue {
  record: EnqueueRecord;
  resolve: (e: Enqueued) => void;
  reject: (err: unknown) => void;
}

const settle = (p: PendingEnqueue, r: Enqueued | Error) => (r instanceof Error ? p.reject(r) : p.resolve(r));

/** An optional time as ISO, or a ValidationError naming the field. */
function isoOrNull(field: string, v: string | Date | null | undefined): string | null {
  if (v === undefined || v === null) return null;
  const d = v instanceof Date ? v : new Date(v);
  if (Number.isNaN(d.getTime())) throw new ValidationError(`${field} "${String(v)}" is not a valid ISO date`);
  return d.toISOString();
}

function toRecord(input: EnqueueInput): EnqueueRecord {
  return {
    kind: input.kind,
    queue: input.queue ?? DEFAULTS.queue,
    payload: input.payload === undefined ? {} : input.payload,
    priority: input.priority ?? DEFAULTS.priority,
    run_at: isoOrNull('runAt', input.runAt),
    max_attempts: input.maxAttempts ?? DEFAULTS.maxAttempts,
    requires: input.requires ?? [],
    idempotency_key: input.idempotencyKey ?? null,
    group: input.group ?? null,
    tags: input.tags ?? [],
    timeout_ms: input.timeoutMs ?? null,
    expire_at: isoOrNull('expireAt', input.expireAt),
  };
}

export class Queue {
  readonly leaseMs: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;

  /** Prepared statements, switched off by itself behind a transaction pooler. */
  private readonly sql = new StatementRunner();

  /** Workflows: flows, dependencies, ctx.parents (queue/flows.ts). */
  readonly flows: Flows<EnqueueInput>;

  constructor(readonly pool: pg.Pool, opts: QueueOptions = {}) {
    this.flows = new Flows({ pool, toRecord, insert: (db, records) => this.insert(db, records), stamp: (actor, db) => this.stamp(actor, db) });
    this.leaseMs = opts.leaseMs ?? DEFAULTS.leaseMs;
    this.backoffBaseMs = opts.backoffBaseMs ?? DEFAULTS.backoffBaseMs;
    this.backoffMaxMs = opts.backoffMaxMs ?? DEFAULTS.backoffMaxMs;
  }

  /** Every statement goes through here: on the pool, or on `db` (a client in a transaction). */
  private run<P extends readonly unknown[], R>(st: Statement<P, R>, values: P, db: Executor = this.pool): Promise<Result<R>> {
    return this.sql.run(db, st, values);
  }

  // ---- producing -------------------------------------------------------------------------

  /**
   * One job. Concurrent calls are coalesced: while INSERTs are in flight, new calls queue up and
   * go together in the next one. No added latency when idle, and under load one statement (one
   * commit, one NOTIFY) carries many jobs. Each call still succeeds or fails on its own.
   * Up to ENQUEUE_FLUSHES statements run at once, so one batch's commit (a WAL flush, the
   * slowest step) overlaps the next batch's insert instead of holding every caller behind it.
   */
  enqueue(input: EnqueueInput): Promise<Enqueued> {
    if (input.dependsOn?.length) return this.flows.enqueueAfter([input]).then(([made]) => made);
    return new Promise((resolve, reject) => {
      let record: EnqueueRecord;
      try {
        record = toRecord(input);
      } catch (err) {
        return reject(err);
      }
      this.pending.push({ record, resolve, reject });
      if (this.flushes < ENQUEUE_FLUSHES) void this.flushPending();
    });
  }

  private pending: PendingEnqueue[] = [];
  private flushes = 0;

  private async flushPending(): Promise<void> {
    this.flushes++;
    while (this.pending.length) {
      const batch = this.pending.splice(0, 500);
      try {
        const results = await this.insertRecords(batch.map((b) => b.record), 'each');
        results.forEach((r, i) => settle(batch[i], r));
      } catch (err) {
        if (batch.length === 1) {
          batch[0].reject(err);
          continue;
        }
        // One bad row fails the whole statement: retry the calls one by one, so only it fails.
        for (const b of batch) {
          await this.insertRecords([b.record], 'each').then(([r]) => settle(b, r), b.reject);
        }
      }
    }
    this.flushes--;
  }

  /** All or nothing: one transaction. Results come back in input order. */
  async enqueueMany(inputs: EnqueueInput[]): Promise<Enqueued[]> {
    if (inputs.length === 0) return [];
    if (inputs.some((i) => i.dependsOn?.length)) return this.flows.enqueueAfter(inputs);
    return (await this.insertRecords(inputs.map(toRecord), 'all')) as Enqueued[];
  }

  // 'all': the first conflict rolls everything back (a batch request). 'each': conflicts are
  // returned per record and the rest is kept (coalesced single enqueues).
  private async insertRecords(records: EnqueueRecord[], atomic: 'all' | 'each'): Promise<(Enqueued | ConflictError)[]> {
    const keyed = records.some((r) => r.idempotency_key !== null);
    try {
      // Without keys it is one statement, atomic by itself; keys need the look-up in the same transaction.
      if (!keyed) return await this.insert(this.pool, records);
      return await inTransaction(this.pool, async (c) => {
        const results = await this.insert(c, records);
        const conflict = results.find((r) => r instanceof ConflictError);
        if (atomic === 'all' && conflict) throw conflict;
        return results;
      });
    } catch (err) {
      throw fromPgError(err);
    }
  }

  private async insert(db: Executor, records: EnqueueRecord[]): Promise<(Enqueued | ConflictError)[]> {
    const { rows } = await this.run(enqueueJobs, [JSON.stringify(records)], db);
    rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
    // Inserted rows follow input order; an input whose key already existed (before, or
    // earlier in this batch) has no row and is looked up instead.
    const out: (Enqueued | undefined)[] = [];
    const seen = new Set<string>();
    const missing: string[] = [];
    let next = 0;
    for (const r of records) {
      const key = r.idempotency_key;
      if (key !== null && seen.has(key)) {
        out.push(undefined);
        continue;
      }
      if (key !== null) seen.add(key);
      const row = rows[next];
      if (row && row.idempotency_key === key) {
        out.push({ job: toJob(row), created: true });
        next++;
      } else {
        out.push(undefined);
        missing.push(key!);
      }
    }
    const existing = new Map<string, Job>();
    const batchCreated = new Map(out.filter((e): e is Enqueued => !!e).map((e) => [e.job.idempotencyKey, e.job]));
    if (missing.length) {
      const found = await this.run(jobsByIdempotencyKey, [missing], db);
      for (const row of found.rows) existing.set(row.idempotency_key, toJob(row));
    }
    return records.map((r, i) => {
      if (out[i]) return out[i];
      const key = r.idempotency_key!;
      const job = existing.get(key) ?? batchCreated.get(key);
      if (!job) return new ConflictError(`idempotency key "${key}" is being used by a job that vanished; try again`);
      if (job.kind !== r.kind || job.queue !== r.queue || canonical(job.payload) !== canonical(r.payload)) {
        return new ConflictError(
          `idempotency key "${key}" already made job ${job.id} with a different kind, queue or payload; use a new key for a different job`,
        );
      }
      return { job, created: false };
    });
  }

  // ---- working (every write is fenced on id, attempt, worker and status) ------------------

  async claim(req: ClaimRequest): Promise<Job[]> {
    const queues = req.queues?.length ? req.queues : null;
    const { rows } = await this.run(claimJobs, [
      queues, req.capabilities ?? [], req.limit, req.worker, req.ownerLock ?? null, req.leaseMs ?? this.leaseMs,
      req.kinds ?? null,
    ]);
    return rows.map(toJob).sort((a, b) => b.priority - a.priority || Number(BigInt(a.id) - BigInt(b.id)));
  }

  /**
   * The claim of one queue that has settings: in a transaction that first locks the queue's
   * settings row, so claims of this queue take turns and each sees the slots the last one took
   * (sql/claim-limited.ts). `retryAt`: when a full rate window next lets a job start.
   */
  async claimLimited(queue: string, req: Omit<ClaimRequest, 'queues'>): Promise<{ jobs: Job[]; retryAt: Date | null }> {
    return inTransaction(this.pool, async (c) => {
      const locked = await this.run(lockQueueSettings, [queue], c);
      if (locked.rows.length === 0) return { jobs: [], retryAt: null };
      const { rows } = await this.run(
        claimLimited,
        [queue, req.capabilities ?? [], req.limit, req.worker, req.ownerLock ?? null, req.leaseMs ?? this.leaseMs, req.kinds ?? null],
        c,
      );
      let retryAt: Date | null = null;
      if (rows.length < req.limit) {
        const free = await this.run(rateFreeAt, [queue], c);
        if (free.rows[0]?.at_ms != null) retryAt = new Date(free.rows[0].at_ms);
      }
      const jobs = rows.map(toJob).sort((a, b) => b.priority - a.priority || Number(BigInt(a.id) - BigInt(b.id)));
      return { jobs, retryAt };
    });
  }

  /** When the next scheduled job for these queues becomes runnable, or null. */
  async nextRunAt(queues?: string[], capabilities: string[] = [], kinds?: string[]): Promise<Date | null> {
    const { rows } = await this.run(nextRunAt, [queues?.length ? queues : null, capabilities, kinds ?? null]);
    return rows[0]?.at_ms == null ? null : new Date(rows[0].at_ms);
  }

  /** Renews leases; returns the ones still held, and which of those were asked to cancel. */
  async heartbeat(worker: string, leases: Lease[], leaseMs = this.leaseMs): Promise<{ held: Set<string>; cancelRequested: Set<string> }> {
    const held = new Set<string>();
    const cancelRequested = new Set<string>();
    if (leases.length === 0) return { held, cancelRequested };
    const { rows } = await this.run(renewLeases, [leases.map((l) => l.id), leases.map((l) => l.attempt), worker, leaseMs]);
    for (const r of rows) {
      held.add(r.id);
      if (r.cancel_requested) cancelRequested.add(r.id);
    }
    return { held, cancelRequested };
  }

  /** Reports progress (0..100). Returns false when the lease was lost. */
  async progress(worker: string, lease: Lease, percent: number, message: string | null = null): Promise<{ held: boolean; cancelRequested: boolean }> {
    if (!Number.isFinite(percent) || percent < 0 || percent > 100) throw new ValidationError('progress percent must be a number from 0 to 100');
    const { rows } = await this.run(reportProgress, [lease.id, lease.attempt, worker, percent, message, this.leaseMs]);
    return { held: rows.length === 1, cancelRequested: rows[0]?.cancel_requested ?? false };
  }

  /** Marks jobs succeeded; returns the ids whose lease was lost (nothing was written for them). */
  async complete(worker: string, done: (Lease & { result: unknown })[]): Promise<string[]> {
    if (done.length === 0) return [];
    const { rows } = await this.run(completeJobs, [
      done.map((d) => d.id), done.map((d) => d.attempt), worker, done.map((d) => JSON.stringify(d.result ?? null)),
    ]);
    return lost(done, rows);
  }

  /**
   * Records failed attempts: each retries after backoff, or fails when out of attempts (or
   * at once when `final`), or becomes cancelled if a cancel was requested. Returns lost ids.
   */
  async fail(worker: string, failed: (Lease & { error: unknown; final?: boolean })[]): Promise<string[]> {
    if (failed.length === 0) return [];
    const { rows } = await this.run(failJobs, [
      failed.map((f) => f.id),
      failed.map((f) => f.attempt),
      worker,
      this.backoffBaseMs,
      this.backoffMaxMs,
      failed.map((f) => JSON.stringify(toErrorInfo(f.error))),
      failed.map((f) => !!f.final),
    ]);
    return lost(failed, rows);
  }

  /** Hands jobs back to the queue without using up their attempt (graceful shutdown). */
  async release(worker: string, leases: Lease[]): Promise<string[]> {
    if (leases.length === 0) return [];
    const { rows } = await this.run(releaseJobs, [leases.map((l) => l.id), leases.map((l) => l.attempt), worker]);
    return lost(leases, rows);
  }

  // ---- administration ---------------------------------------------------------------------

  /** Runs fn in one transaction whose events then name `actor` (data.by); on the pool without one. */
  private async as<T>(actor: Actor | undefined, fn: (db: Executor) => Promise<T>): Promise<T> {
    if (!actor) return fn(this.pool);
    return inTransaction(this.pool, async (c) => {
      const result = await fn(c);
      await this.stamp(actor, c);
      return result;
    });
  }

  /** Signs the events transaction c wrote so far with `actor` (data.by); run it last. */
  private async stamp(actor: Actor | undefined, c: Executor): Promise<void> {
    if (actor) await this.run(stampActor, [JSON.stringify(actor)], c);
  }

  async cancel(id: string, actor?: Actor): Promise<Job> {
    const { rows } = await this.as(actor, (db) => this.run(cancelJob, [id], db));
    if (rows[0]) return toJob(rows[0]);
    const job = await this.mustGet(id);
    throw new ConflictError(`job ${id} is already ${job.status}; only queued, blocked or running jobs can be cancelled`);
  }

  async retry(id: string, actor?: Actor): Promise<Job> {
    const { rows } = await this.as(actor, (db) => this.run(retryJob, [id], db));
    if (rows[0]) return toJob(rows[0]);
    const job = await this.mustGet(id);
    if (job.status === 'failed' || job.status === 'cancelled') {
      throw new ConflictError(`job ${id} has used ${MAX_ATTEMPTS_LIMIT} attempts, the most a job may have`);
    }
    throw new ConflictError(`job ${id} is ${job.status}; only failed or cancelled jobs can be retried`);
  }

  /** How many jobs match the filter (any status). */
  async countMatching(filter: JobFilter): Promise<number> {
    const { rows } = await this.run(countJobs, filterValues(filter)).catch(rethrowPg);
    return rows[0].n;
  }

  /**
   * Retries, cancels or deletes every job the filter matches that is in an eligible status,
   * in transactions of at most `batchSize` jobs, so the event stream and vacuum never wait on
   * one long transaction. Jobs enqueued after the call began are not touched.
   */
  async bulk(action: BulkAction, filter: JobFilter, opts: { actor?: Actor; batchSize?: number } = {}): Promise<Required<BulkResult>> {
    const values = filterValues(filter);
    const batchSize = opts.batchSize ?? DEFAULTS.bulkBatch;
    const total = { matched: 0, affected: 0 };
    let cursor: string | null = null;
    for (;;) {
      const r: { matched: number; affected: number; last: string | null } = await retryOnConflict(() =>
        this.as(opts.actor, async (db) => (await this.run(bulkStatements[action], [...values, cursor, batchSize], db)).rows[0]),
      );
      total.matched += r.matched;
      total.affected += r.affected;
      if (r.matched < batchSize || r.last === null) return total;
      cursor = r.last;
    }
  }

  /** Requeues (or fails) running jobs whose lease expired or whose owner died. One reaper at a time. */
  async reap(limit = 1000): Promise<{ requeued: number; failed: number; cancelled: number }> {
    const { rows } = await this.run(reapJobs, [limit]);
    const count = (s: JobStatus) => rows.filter((r) => r.status === s).length;
    return { requeued: count('queued'), failed: count('failed'), cancelled: count('cancelled') };
  }

  /** Cancels queued jobs whose expireAt has passed (event 'expired'). Returns how many. */
  async expire(limit = 1000): Promise<number> {
    return (await this.run(expireJobs, [limit])).rowCount;
  }

  /** Drops rate-window records no window counts any more. */
  async pruneQueueStarts(): Promise<number> {
    return (await this.run(pruneQueueStarts, [])).rowCount;
  }

  // ---- queue settings ---------------------------------------------------------------------

  /**
   * Changes a queue's settings (creating its row if needed) and returns its entry. The row
   * records `actor` and the time as its last change (updatedBy, updatedAt).
   */
  async patchQueue(queue: string, patch: QueueSettingsPatch, actor?: Actor): Promise<QueueInfo> {
    try {
      await this.run(patchQueueSettings, [queue, JSON.stringify(patch), actor ? JSON.stringify(actor) : null]);
    } catch (err) {
      throw fromPgError(err);
    }
    const [info] = await this.counts(queue);
    return info;
  }

  /** The settings of every queue that is paused or limited (the plain claim leaves those alone). */
  async heldQueues(): Promise<(QueueSettings & { queue: string })[]> {
    return (await this.run(heldQueueSettings, [])).rows.map(toSettings);
  }

  // ---- schedules ------------------------------------------------------------------------------

  /**
   * Creates or replaces a schedule. Its next tick counts from now: replacing or resuming one
   * never makes jobs for ticks that passed meanwhile. A bad cron or zone is a ValidationError.
   */
  async putSchedule(name: string, input: ScheduleInput): Promise<{ schedule: Schedule; created: boolean }> {
    const timezone = input.timezone ?? DEFAULTS.timezone;
    parseCron(input.cron, timezone);
    toRecord(input.job); // the template must make a valid job
    const paused = input.paused ?? false;
    const next = paused ? null : nextTick(input.cron, timezone, new Date());
    try {
      const { rows } = await this.run(putSchedule, [name, input.cron, timezone, JSON.stringify(input.job), paused, next]);
      return { schedule: toSchedule(rows[0]), created: rows[0].created };
    } catch (err) {
      throw fromPgError(err);
    }
  }

  /** False when there was no such schedule. */
  async deleteSchedule(name: string): Promise<boolean> {
    return (await this.run(deleteSchedule, [name])).rows.length === 1;
  }

  async schedules(): Promise<Schedule[]> {
    return (await this.run(listSchedules, [])).rows.map(toSchedule);
  }

  /** Makes the schedule's job now ("run now"), outside its ticks; its enqueued event names `actor` (data.by). */
  async runSchedule(name: string, actor?: Actor): Promise<Job> {
    return inTransaction(this.pool, async (c) => {
      const { rows } = await this.run(lockSchedule, [name], c);
      if (!rows[0]) throw new NotFoundError(`schedule "${name}" does not exist`);
      const [made] = await this.insert(c, [toRecord(rows[0].job as unknown as ScheduleJob)]);
      if (made instanceof Error) throw made;
      await this.run(markScheduleRun, [name, new Date(made.job.createdAt), made.job.id, rows[0].next_run_at], c);
      await this.stamp(actor, c);
      return made.job;
    });
  }

  /**
   * One scheduler turn: makes the job of every due schedule, for its LATEST tick that has come
   * (ticks missed while no scheduler ran are skipped), with the idempotency key
   * schedule:NAME:TICK_ISO, and moves it to its next tick, all in one transaction. Only one
   * process takes a turn at a time; `busy` says another one has it now (try again shortly).
   */
  async fireDueSchedules(): Promise<{ busy: boolean; made: Job[] }> {
    return inTransaction(this.pool, async (c) => {
      const turn = (await this.run(schedulerTurn, [], c)).rows[0];
      if (!turn.ok) return { busy: true, made: [] };
      const made: Job[] = [];
      for (const s of (await this.run(dueSchedules, [], c)).rows) {
        const tick = latestTick(s.cron, s.timezone, turn.now) ?? s.next_run_at!;
        const key = `schedule:${s.name}:${tick.toISOString()}`;
        const [r] = await this.insert(c, [toRecord({ ...(s.job as unknown as ScheduleJob), idempotencyKey: key })]);
        if (r instanceof Error) throw r;
        made.push(r.job);
        await this.run(markScheduleRun, [s.name, tick, r.job.id, nextTick(s.cron, s.timezone, turn.now)], c);
      }
      return { busy: false, made };
    });
  }

  /** When the next unpaused schedule is due, or null. */
  async nextScheduleDue(): Promise<Date | null> {
    const at = (await this.run(nextScheduleDue, [])).rows[0]?.at_ms;
    return at == null ? null : new Date(at);
  }

  // ---- the worker registry ------------------------------------------------------------------

  async registerWorker(w: WorkerRegistration): Promise<void> {
    await this.run(registerWorker, [w.id, w.host, w.pid, w.queues, w.kinds, w.capabilities, w.concurrency, w.lockKey]);
  }

  /** Refreshes last_seen_at; false when the row is gone (register again). */
  async touchWorker(id: string, lockKey: number | null): Promise<boolean> {
    return (await this.run(touchWorker, [id, lockKey])).rows.length === 1;
  }

  async unregisterWorker(id: string): Promise<void> {
    await this.run(unregisterWorker, [id]);
  }

  /** Deletes registry rows of workers that died; returns their ids. */
  async pruneWorkers(): Promise<string[]> {
    return (await this.run(pruneDeadWorkers, [])).rows.map((r) => r.id);
  }

  /** Deletes finished jobs older than `olderThanMs`, with their events, in batches. Returns the count. */
  async cleanup(olderThanMs: number, batchSize = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const { rowCount } = await this.run(deleteFinishedJobs, [olderThanMs, batchSize]);
      total += rowCount;
      if (rowCount < batchSize) return total;
    }
  }

  // ---- history ----------------------------------------------------------------------------

  /**
   * Rolls new events up into per-minute queue history, records each queue's depth for this
   * minute and drops history past 30 days. One process at a time: returns null at once when
   * another holds the rollup, else how many events it added. Each step is its own short
   * transaction (see rollupEvents): the event stream waits on any open transaction that has
   * written, so none of these may count a large table while holding one.
   */
  async rollupHistory(batchSize = 20_000): Promise<number | null> {
    const locked = async <T>(fn: (c: Executor) => Promise<T>): Promise<T | null> =>
      inTransaction(this.pool, async (c) => ((await this.run(lockHistory, [], c)).rows[0].locked ? fn(c) : null));
    let total = 0;
    for (;;) {
      const n = await locked(async (c) => (await this.run(rollupEvents, [batchSize], c)).rows[0].n);
      if (n === null) return total > 0 ? total : null;
      total += n;
      if (n < batchSize) break;
    }
    await locked((c) => this.run(recordDepth, [], c));
    await locked((c) => this.run(pruneHistory, [DEFAULTS.historyRetentionMs], c));
    return total;
  }

  /** A queue's history over the range, in its buckets, oldest first. */
  async history(queue: string, range: HistoryRange, now = Date.now()): Promise<HistoryBucket[]> {
    const { rows } = await this.run(readHistory, [queue, rangeStart(range, now), `${HISTORY_RANGES[range].bucketMs / 1000} seconds`]);
    return toBuckets(rows, range, now);
  }

  // ---- reading ----------------------------------------------------------------------------

  async get(id: string): Promise<Job | null> {
    const { rows } = await this.run(getJob, [id]);
    return rows[0] ? toJob(rows[0]) : null;
  }

  private async mustGet(id: string): Promise<Job> {
    const job = await this.get(id);
    if (!job) throw new NotFoundError(`job ${id} does not exist`);
    return job;
  }

  /**
   * A page of jobs, newest first. A search (payload, error or time range: no index serves
   * them) looks at the newest `window` jobs below the cursor only; when that cuts the page
   * short, `searched` says so and `next` continues below the window.
   */
  async list(q: JobFilter & ListOptions = {}): Promise<JobPage> {
    const { before = null, limit = DEFAULTS.listLimit, window = DEFAULTS.searchWindow, ...f } = q;
    const values = filterValues(f);
    let floor: string | null = null;
    if (isSearch(f)) floor = (await this.run(windowFloor, [before, window])).rows[0]?.id ?? null;
    // A payload filter the database cannot take (a \u0000 in a string) is the caller's 400.
    const { rows } = await this.run(listJobs, [...values, before, limit + 1, floor]).catch(rethrowPg);
    const jobs = rows.slice(0, limit).map(toJob);
    if (rows.length > limit) return { jobs, next: jobs[jobs.length - 1].id };
    // The window ended before the page filled: older jobs remain, below the window.
    if (floor !== null) return { jobs, next: floor, searched: window };
    return { jobs, next: null };
  }

  /** Every queue with jobs or settings (or just `queue`), with counts and settings. */
  async counts(queue?: string): Promise<QueueInfo[]> {
    const { rows } = await this.run(queueCounts, [queue ?? null]);
    return rows.map((r) => ({
      queued: r.queued, scheduled: r.scheduled, running: r.running,
      succeeded: r.succeeded, failed: r.failed, cancelled: r.cancelled, blocked: r.blocked,
      ...toSettings(r),
      updatedBy: r.updated_by,
      updatedAt: r.updated_at?.toISOString() ?? null,
    }));
  }

  async events(jobId: string): Promise<JobEvent[]> {
    return (await this.run(jobEvents, [jobId])).rows.map(toEvent);
  }

  /**
   * Transactions of other databases that were running when last looked up (full ids). The feed's
   * horizon skips them; a transaction's database never changes, so the list is safe however old.
   */
  private otherXids: string[] = [];

  /**
   * Looks up the running transactions of other databases (see sql/horizon.ts) for the horizon to
   * skip. Costs a read of pg_locks and pg_stat_activity: for when the feed is held back. True when
   * it found one the horizon did not skip yet.
   */
  async learnOtherDatabases(): Promise<boolean> {
    const xids = (await this.run(otherDatabaseXids, [])).rows.map((r) => r.x);
    const known = new Set(this.otherXids);
    this.otherXids = xids;
    return xids.some((x) => !known.has(x));
  }

  /** Events after `after` and below the horizon, gap-free (see sql/feed.ts): the tailer's read. */
  async feed(after: Cursor = START, limit = 1000): Promise<JobEvent[]> {
    const { rows } = await this.run(readFeed, [after.tx, after.id, limit, this.otherXids]);
    return rows.map(toEvent);
  }

  /** Events in (after, through], optionally for one job or queue: a replay up to a position the feed reached. */
  async feedThrough(after: Cursor, through: Cursor, limit = 1000, filter: { jobId?: string; queue?: string; flowId?: string } = {}): Promise<JobEvent[]> {
    const { rows } = await this.run(readFeedThrough, [
      after.tx, after.id, through.tx, through.id, limit, filter.jobId ?? null, filter.queue ?? null, filter.flowId ?? null,
    ]);
    return rows.map(toEvent);
  }

  /** True when committed events past `after` wait behind an open transaction (see sql/feed-backlog.ts). */
  async heldBack(after: Cursor): Promise<boolean> {
    const { rows } = await this.run(feedHeldBack, [after.tx, after.id, this.otherXids]);
    return rows[0].held;
  }

  /** The transaction that holds the feed back past `after`, and its session, or null when none does. */
  async feedHolder(after: Cursor): Promise<FeedHolder | null> {
    const { rows } = await this.run(feedHolder, [after.tx, after.id]);
    const r = rows[0];
    if (!r) return null;
    return {
      xid: r.xid,
      pid: r.pid ?? null,
      applicationName: r.application_name ?? null,
      state: r.state ?? null,
      gid: r.gid ?? null,
      transactionStart: r.xact_start?.toISOString() ?? null,
      queryStart: r.query_start?.toISOString() ?? null,
      ageMs: r.age_ms === null ? null : Math.max(0, Math.round(r.age_ms)),
    };
  }

  /** The newest feed position: where a live-only stream starts. */
  async head(): Promise<Cursor> {
    const { rows } = await this.run(feedHead, []);
    return rows[0] ? { tx: rows[0].tx, id: rows[0].id } : START;
  }

  /** Live registered workers (idle ones too) and any unregistered holder of running jobs. */
  async workers(): Promise<WorkerInfo[]> {
    const { rows } = await this.run(listWorkers, []);
    const iso = (d: Date | null) => d?.toISOString() ?? null;
    return rows.map((r) => ({
      worker: r.worker, host: r.host, pid: r.pid, queues: r.queues, kinds: r.kinds, capabilities: r.capabilities,
      concurrency: r.concurrency, running: r.running, startedAt: iso(r.started_at), lastSeenAt: iso(r.last_seen_at),
      since: iso(r.since), jobs: r.jobs,
    }));
  }

  async tableStats(): Promise<{ name: string; liveTuples: number; deadTuples: number; lastAutovacuum: string | null; lastVacuum: string | null }[]> {
    const { rows } = await this.run(tableStats, []);
    return rows.map((r) => ({
      name: r.name,
      liveTuples: r.live_tuples,
      deadTuples: r.dead_tuples,
      lastAutovacuum: r.last_autovacuum?.toISOString() ?? null,
      lastVacuum: r.last_vacuum?.toISOString() ?? null,
    }));
  }
}

const rethrowPg = (err: unknown): never => {
  throw fromPgError(err);
};

/** Runs fn again when PostgreSQL broke a deadlock or serialization conflict by aborting it. */
async function retryOnConflict<T>(fn: () => Promise<T>, tries = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (i >= tries || (code !== '40P01' && code !== '40001')) throw fromPgError(err);
    }
  }
}

function lost(sent: Lease[], returned: { id: string }[]): string[] {
  const kept = new Set(returned.map((r) => r.id));
  return sent.filter((s) => !kept.has(s.id)).map((s) => s.id);
}

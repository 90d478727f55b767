// The worker's N slots, and a bounded buffer of claimed jobs waiting for one: which jobs it
// holds, and running a handler with its context.
//
// A held job's states are in active-job.ts.
//
// How much to claim (`free`): the free slots, plus `ahead()` jobs to buffer. The worker sizes
// `ahead` from its own measured pace (worker.ts), so the buffer holds only what it would start
// within a few tens of milliseconds, or two claims' time when claims are slower (pace.ts): large
// claims for fast jobs, none ahead for slow ones, and nothing an idle peer would have started
// sooner. A buffer is refilled when half empty, so a busy worker makes a few large claims rather
// than one per freed slot.
//
// Timeouts (job.timeoutMs): at the timeout the signal fires with a TimeoutError and the failed
// attempt is recorded AT ONCE, whatever the handler does; the job goes on as finishing/writing
// and a late return is ignored. The slot stays taken until the handler really returns: this
// process is still doing that work, so claiming more would overcommit it. In the database the
// attempt has ended, so queue limits count the job as no longer running.
//
// Outcomes not yet written count against claiming too (backpressure): when the database writes
// outcomes slower than handlers produce them, the worker claims less instead of piling up
// finished jobs whose leases it must keep renewing.
import { byId } from '../queue/job.ts';
import type { ClaimedJob } from '../queue/claimed.ts';
import type { Lease } from '../queue/queue.ts';
import type { Logger } from '../queue/log.ts';
import { JobCancelledError, JobTimeoutError, UnknownKindError } from './errors.ts';
import { abort, handlerContext } from './job-context.ts';
import { endProcess, inSpan, startProcess } from './tracing.ts';
import { Pace } from './pace.ts';
import type { ActiveJob } from './active-job.ts';
import type { Task } from './tasks.ts';
import type { Parent } from '../queue/services/flows.ts';
import type { DurableService } from '../queue/services/durable.ts';
import type { StepWriter } from './step-writer.ts';
import { UnrecoverableError } from './errors.ts';

export interface SlotsOptions {
  capacity: number;
  /** Most outcomes waiting to be written before claiming pauses. */
  maxUnwritten: number;
  /** How many claimed jobs may wait for a slot right now (0: claim free slots only). */
  ahead?(): number;
  worker: string;
  tasks: ReadonlyMap<string, Task>;
  logger: Logger;
  progress(a: ActiveJob, percent: number, message?: string): Promise<void>;
  /** Most one progress write per this many ms per job (DEFAULTS.progressEveryMs). */
  progressEveryMs?: number;
  succeeded(a: ActiveJob, result: unknown): void;
  failed(a: ActiveJob, error: unknown, final: boolean): void;
  /** A handler returned or an outcome was written: there may be room to claim. */
  freed(): void;
  /** The parents of a job that has some (ctx.parents); read before its handler starts. */
  parents?(jobId: string): Promise<Parent[]>;
  /**
   * Which of these buffered jobs may start now (same order), checked against the database's
   * current settings and clock; null when that could not be read (they stay buffered).
   */
  admit(jobs: ClaimedJob[]): Promise<boolean[] | null>;
  /** Buffered jobs `admit` refused, forgotten here: the caller hands them back to the queue. */
  refused(leases: Lease[]): void;
  /** What durable calls write with (absent: handlers cannot make them). */
  durable?: { service: DurableService; worker: string; steps: StepWriter; wakeAt?(epochMs: number): void };
}

/** After `admit` failed (database unreachable), buffered jobs are tried again this much later. */
const ADMIT_RETRY_MS = 200;

export class Slots {
  private readonly held = new Map<string, ActiveJob>();
  /** Buffered jobs in claim order (priority, then id). */
  private buffer: ActiveJob[] = [];
  /** Handlers finished: the pace that sizes the buffer. */
  readonly pace = new Pace();
  private busy = 0;
  private unwritten = 0;
  private idleWaiters: (() => void)[] = [];
  /** An `admit` is in flight: buffered jobs wait for it rather than asking again. */
  private admitting = false;
  private startQueued = false;
  private admitRetry?: NodeJS.Timeout;

  constructor(private readonly opts: SlotsOptions) {}

  /** How many jobs a claim may take now (0: do not claim yet). */
  get free(): number {
    const target = this.opts.capacity + (this.opts.ahead?.() ?? 0);
    const room = Math.min(target - this.busy - this.buffer.length, this.opts.maxUnwritten - this.unwritten);
    if (this.buffer.length > 0 && room < target / 2) return 0;
    return Math.max(0, room);
  }

  /** Slots with nothing in them, not counting claim-ahead: what a limited queue's claim may take. */
  get idle(): number {
    return Math.max(0, this.opts.capacity - this.busy - this.buffer.length);
  }

  get buffered(): number {
    return this.buffer.length;
  }

  /**
   * Every lease to renew, in id order (see byId): jobs whose outcome is being written too, since
   * that write may be stuck on a cut connection and retried later.
   */
  leases(): Lease[] {
    const out: Lease[] = [];
    for (const a of this.held.values()) out.push(a.lease);
    return out.sort(byId);
  }

  /** A renewal sent before `deadline` was due reached the database: these leases last until it. */
  renewed(leases: Lease[], deadline: number): void {
    for (const l of leases) {
      const a = this.find(l);
      if (a) a.deadline = Math.max(a.deadline, deadline);
    }
  }

  /** The listener was cut: every lease may now end by `deadline`, unless a renewal lands first. */
  cutShort(deadline: number): void {
    for (const a of this.held.values()) a.deadline = Math.min(a.deadline, deadline);
  }

  /**
   * Stops the jobs whose local deadline has passed (`now`): their signal fires and their outcome
   * is never written, as for a lost lease. Jobs whose outcome is being written are left to its
   * fenced write. Returns the stopped ones.
   */
  overdue(now: number, reason: (lease: Lease) => Error): Lease[] {
    const late: Lease[] = [];
    for (const a of this.held.values()) if (a.deadline <= now) late.push(a.lease);
    return late.filter((l) => this.abandon(l, reason(l)));
  }

  private find(lease: Lease): ActiveJob | undefined {
    const a = this.held.get(lease.id);
    return a && a.lease.attempt === lease.attempt ? a : undefined;
  }

  /**
   * Runs a claimed job in a free slot, or buffers it until one frees (claims never take more than
   * `free`). `deadline`: when its lease runs out as this worker counts it (see ActiveJob).
   */
  start(job: ClaimedJob, deadline = Infinity): void {
    const a: ActiveJob = { job, lease: { id: job.id, attempt: job.attempt }, state: 'buffered', claimedAt: performance.now(), deadline };
    if (this.held.size === 0) this.pace.resume();
    this.held.set(job.id, a);
    if (this.busy < this.opts.capacity) this.run(a);
    else this.buffer.push(a);
  }

  private run(a: ActiveJob): void {
    a.state = 'running';
    this.busy++;
    if (this.opts.logger.isLevelEnabled('debug')) {
      this.opts.logger.debug({ job: a.job.id, kind: a.job.kind, attempt: a.job.attempt, queue: a.job.queue }, 'job started');
    }
    void this.execute(a);
  }

  private async execute(a: ActiveJob): Promise<void> {
    const task = this.opts.tasks.get(a.job.kind);
    let ok = false;
    let value: unknown;
    let final = false;
    // The attempt's time counts from its claim, as the database's lease cap does: a job that
    // waited in the buffer has less of it left.
    const left = a.job.timeoutMs ? Math.max(0, a.job.timeoutMs - (performance.now() - a.claimedAt)) : 0;
    const timer = a.job.timeoutMs ? setTimeout(() => this.timeout(a), left) : undefined;
    const span = startProcess(a.job);
    if (span) a.span = span;
    try {
      if (!task) {
        // Only reachable if a job's kind changed under us: claims ask for known kinds only.
        final = true;
        throw new UnknownKindError(a.job.kind, this.opts.worker);
      }
      // Only jobs with parents pay the read; a failed read fails the attempt like a throw would.
      const parents = a.job.onParentFailure !== null && this.opts.parents ? await this.opts.parents(a.job.id) : [];
      const ctx = handlerContext(a, parents, this.opts, this.suspendedRun);
      value = await (span ? inSpan(span, () => task(a.job.payload, ctx)) : task(a.job.payload, ctx));
      ok = true;
    } catch (err) {
      value = err;
      final ||= err instanceof UnrecoverableError;
    }
    if (timer) clearTimeout(timer);
    // A run that ended to sleep or wait freed its slot then (suspended below); only a handler that
    // kept going past its wait gets here, and nothing it does counts.
    if (a.suspended) return;
    // The last progress value lands before the outcome (and no timer outlives the handler).
    if (a.progress) await a.progress.flush();
    this.busy--;
    this.pace.tick();
    const { aborted } = a;
    if (span) endProcess(span, aborted ?? (ok ? undefined : value));
    if (a.timedOut) {
      this.opts.logger.debug({ job: a.job.id, attempt: a.job.attempt }, 'handler of a timed-out job returned; its failure was recorded at the timeout');
    } else if (a.state === 'abandoned') {
      this.opts.logger.debug({ job: a.job.id, attempt: a.job.attempt }, 'handler of an abandoned job returned; outcome discarded');
    } else if (aborted) {
      // Only a cancel aborts a job we still hold. A handler that stops early on its signal may
      // return a partial result, so a cancelled job ends cancelled whatever it returned.
      this.finish(a, false, aborted);
    } else if (ok) {
      a.durable?.finished();
      this.finish(a, true, value);
    } else {
      this.finish(a, false, value, final);
    }
    this.startSoon();
    this.wakeIdle();
    this.opts.freed();
  }

  /**
   * Fills the free slots from the buffer a turn later: handlers that return together (fast jobs
   * started together do) then share one start check instead of the first paying one alone.
   */
  private startSoon(): void {
    if (this.startQueued) return;
    this.startQueued = true;
    setImmediate(() => {
      this.startQueued = false;
      this.startBuffered();
    });
  }

  private wakeIdle(): void {
    if (this.idleWaiters.length && this.running().length === 0) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /**
   * Fills free slots from the buffer. A buffered job was checked against the settings when it
   * was claimed, which may be long ago: it starts only once `admit` (worker/may-start.ts) said yes
   * for all the slots free at that moment. So a pause (or expireAt) that the database had when a
   * job was about to start always wins over the buffer.
   */
  private startBuffered(): void {
    if (this.admitting) return;
    const n = Math.min(this.opts.capacity - this.busy, this.buffer.length);
    if (n <= 0) return;
    const batch = this.buffer.splice(0, n);
    for (const a of batch) a.state = 'starting';
    this.busy += n;
    this.admitting = true;
    void this.admitBatch(batch);
  }

  private async admitBatch(batch: ActiveJob[]): Promise<void> {
    let ok: boolean[] | null = null;
    try {
      ok = await this.opts.admit(batch.map((a) => a.job));
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message, jobs: batch.length }, 'could not check buffered jobs before starting them');
    }
    this.admitting = false;
    this.busy -= batch.length;
    const refused: Lease[] = [];
    const again: ActiveJob[] = [];
    batch.forEach((a, i) => {
      if (a.state !== 'starting') return; // abandoned meanwhile (lease lost, shutdown)
      if (a.aborted) {
        // Cancelled while being checked: it never ran, so the cancel is its outcome.
        this.finish(a, false, a.aborted);
      } else if (ok === null) {
        a.state = 'buffered';
        again.push(a);
      } else if (ok[i]) {
        this.run(a);
      } else {
        a.state = 'abandoned';
        this.held.delete(a.lease.id);
        refused.push(a.lease);
      }
    });
    if (again.length > 0) {
      this.buffer.unshift(...again);
      clearTimeout(this.admitRetry);
      this.admitRetry = setTimeout(() => this.startBuffered(), ADMIT_RETRY_MS);
    } else {
      this.startBuffered();
    }
    if (refused.length > 0) this.opts.refused(refused.sort(byId));
    this.wakeIdle();
    this.opts.freed();
  }

  /**
   * The run ended to sleep or wait (its job is queued again, or cancelled, in the database): the
   * slot is free at once, the job forgotten, its signal fired so that work it started stops.
   */
  private readonly suspendedRun = (a: ActiveJob): void => {
    if (a.suspended) return;
    a.suspended = true;
    if (a.state === 'running') {
      a.state = 'abandoned';
      this.held.delete(a.lease.id);
    }
    abort(a, new Error(`job ${a.job.id} ended its run to sleep or wait`));
    if (a.span) endProcess(a.span, undefined);
    this.busy--;
    this.pace.tick();
    this.startSoon();
    this.wakeIdle();
    this.opts.freed();
  };

  /** The attempt ran past timeoutMs: signal the handler and record the failure now. */
  private timeout(a: ActiveJob): void {
    if (a.state !== 'running') return;
    const err = new JobTimeoutError(a.job.id, a.job.timeoutMs!);
    a.timedOut = true;
    abort(a, err);
    this.opts.logger.warn({ job: a.job.id, attempt: a.job.attempt, timeoutMs: a.job.timeoutMs }, 'job timed out: failure recorded, handler signalled');
    this.finish(a, false, err);
  }

  /** Its outcome goes to be written: the result when `ok`, else the failure (no closure per job). */
  private finish(a: ActiveJob, ok: boolean, value: unknown, final = false): void {
    a.state = 'finishing';
    this.unwritten++;
    if (ok) this.opts.succeeded(a, value);
    else this.opts.failed(a, value, final);
  }

  /** Jobs whose handler runs, or is about to (being admitted). */
  running(): ActiveJob[] {
    return [...this.held.values()].filter((a) => a.state === 'running' || a.state === 'starting');
  }

  /** The lease is gone or handed back: fire the signal, forget the job, never write its outcome. */
  abandon(lease: Lease, reason: Error): boolean {
    const a = this.find(lease);
    if (!a || (a.state !== 'running' && a.state !== 'buffered' && a.state !== 'starting')) return false; // a finishing job's fenced write decides
    if (a.state === 'buffered') this.unbuffer(a);
    a.state = 'abandoned';
    this.held.delete(lease.id);
    abort(a, reason);
    return true;
  }

  cancel(lease: Lease): boolean {
    const a = this.find(lease);
    if (!a || a.aborted) return false;
    if (a.state === 'buffered') {
      // Never started: record the cancel as its outcome (the fail write ends it cancelled).
      this.unbuffer(a);
      const reason = abort(a, new JobCancelledError(lease.id));
      this.finish(a, false, reason);
      this.opts.freed();
      return true;
    }
    if (a.state !== 'running' && a.state !== 'starting') return false;
    // A starting job sees the abort when its check returns, and records the cancel then.
    abort(a, new JobCancelledError(lease.id));
    return true;
  }

  private unbuffer(a: ActiveJob): void {
    this.buffer = this.buffer.filter((b) => b !== a);
  }

  /**
   * Takes buffered jobs out (all of them, or those claimed at least `olderThanMs` ago) and
   * forgets them: the caller hands them back to the queue. Their handlers never ran.
   */
  takeBuffered(olderThanMs = 0, which: (job: ClaimedJob) => boolean = () => true): Lease[] {
    const cutoff = performance.now() - olderThanMs;
    const take = (a: ActiveJob) => a.claimedAt <= cutoff && which(a.job);
    const taken = this.buffer.filter(take);
    if (taken.length === 0) return [];
    this.buffer = this.buffer.filter((a) => !take(a));
    for (const a of taken) {
      a.state = 'abandoned';
      this.held.delete(a.lease.id);
    }
    return taken.map((a) => a.lease).sort(byId);
  }

  /** An outcome write starts (true) or failed and will be retried (false). */
  writing(leases: Lease[], now: boolean): void {
    for (const l of leases) {
      const a = this.find(l);
      if (a && (a.state === 'finishing' || a.state === 'writing')) a.state = now ? 'writing' : 'finishing';
    }
  }

  /** The outcome was written (or lost): stop renewing. */
  settled(lease: Lease): void {
    const a = this.find(lease);
    if (a?.state !== 'finishing' && a?.state !== 'writing') return;
    this.held.delete(lease.id);
    this.unwritten--;
    this.opts.freed();
  }

  isRunning(lease: Lease): boolean {
    return this.find(lease)?.state === 'running';
  }

  /** Resolves true when no handler of a held job is running, or false after `timeoutMs`. */
  whenIdle(timeoutMs: number): Promise<boolean> {
    if (this.running().length === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.idleWaiters = this.idleWaiters.filter((w) => w !== done);
        resolve(false);
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.idleWaiters.push(done);
    });
  }
}

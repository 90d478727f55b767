// One worker process: N slots fed by claims in batches, woken by NOTIFY, with leases renewed in
// one heartbeat, outcomes written in batches, and the reaper run on a timer. The parts are
// small modules; this file wires them together and owns start and stop.
//
// Unknown kinds: a worker claims only the kinds it has tasks for (built-ins, in-process tasks
// and --tasks DIR), the way graphile-worker filters on its task identifiers. A job whose kind
// no running worker knows stays queued, visible on the board, until a worker that has the task
// starts (a rolling deploy that adds a task loses nothing). Failing such jobs instead would
// burn them whenever workers with different task sets share a queue.
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import type pg from 'pg';
import { createPool, withSessionSetting } from '../queue/database.ts';
import { Listener } from '../queue/listener.ts';
import { CONTROL_CHANNEL, JOBS_CHANNEL, parseJobsPayload } from '../queue/channels.ts';
import { Db } from '../queue/services/db.ts';
import { MaintainService } from '../queue/services/maintain.ts';
import { RegistryService } from '../queue/services/registry.ts';
import { ScheduleService } from '../queue/services/schedules.ts';
import { WorkService } from '../queue/services/work.ts';
import { FlowService } from '../queue/services/flows.ts';
import { CONNECT_TIMEOUT_MS, DEFAULTS } from '../queue/defaults.ts';
import { ValidationError } from '../queue/errors.ts';
import type { Logger } from '../queue/log.ts';
import { Claimer } from './claimer.ts';
import { ClaimRound } from './claim-round.ts';
import { Completions } from './completions.ts';
import { DurableService } from '../queue/services/durable.ts';
import { LeaseExpiredError, LeaseLostError, ShutdownError } from './errors.ts';
import { LeaseKeeper } from './leases.ts';
import { HeardQueues } from './heard-queues.ts';
import { HeldQueues } from './held-queues.ts';
import { StartCheck } from './may-start.ts';
import { BufferedJobs } from './buffered-jobs.ts';
import { Maintenance } from './maintenance.ts';
import { Registry } from './registry.ts';
import { Scheduler } from './scheduler.ts';
import { aheadHorizon } from './pace.ts';
import { Slots } from './slots.ts';
import type { ActiveJob } from './active-job.ts';
import { StepWriter } from './step-writer.ts';
import { loadTasks, type Task } from './tasks.ts';
import type { WorkerOptions } from './options.ts';

/** The wake-up reason of a herald_jobs notification, before the queue's name. */
const NOTIFIED = 'notify ';

/** Outcomes waiting to be written before claiming pauses: two full complete() batches. */
const MAX_UNWRITTEN = 1_000;

/** `host:pid:random`: readable in locked_by and events, unique across restarts. */
export function workerId(): string {
  return `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

export class Worker {
  readonly id = workerId();
  private readonly log: Logger;
  private readonly pool: pg.Pool;
  /** The core services a worker uses, on one handle: no enqueue coalescer, no feed horizon. */
  private readonly db: Db;
  private readonly work: WorkService;
  private readonly startCheck: StartCheck;
  /** ctx.parents of jobs that have some. */
  private readonly flows: FlowService;
  private readonly listener: Listener;
  private readonly queues?: Set<string>;
  private readonly leaseMs: number;
  private tasks = new Map<string, Task>();
  private slots!: Slots;
  private claimer!: Claimer;
  private leases!: LeaseKeeper;
  private completions!: Completions;
  private maintenance!: Maintenance;
  private registry!: Registry;
  private scheduler?: Scheduler;
  private held!: HeldQueues;
  private buffer!: BufferedJobs;
  /** How long a claim round takes (ms, smoothed); undefined before the first. */
  private claimMs?: number;
  private readonly heard: HeardQueues;
  private stopping?: Promise<void>;

  constructor(private readonly opts: WorkerOptions) {
    this.log = (opts.logger ?? pino({ level: 'silent' })).child({ worker: this.id });
    this.leaseMs = opts.leaseMs ?? DEFAULTS.leaseMs;
    this.queues = opts.queues?.length ? new Set(opts.queues) : undefined;
    // A few connections shared by all slots: one claim, one batch of each outcome and a
    // renewal are in flight at most; progress reports and housekeeping share the rest.
    const url = opts.asyncCommit ?? DEFAULTS.asyncCommit ? withSessionSetting(opts.databaseUrl, 'synchronous_commit', 'off') : opts.databaseUrl;
    this.pool = createPool(url, {
      max: Math.min(10, 4 + Math.ceil(opts.concurrency / 16)),
      logger: this.log,
      applicationName: `herald:worker:${process.pid}`,
      // The wake-up barrier and the claim go in one round trip (WorkService.claimAfterBarriers).
      pipeline: true,
      // A renewal waiting for a connection to a database that does not answer fails, and is retried.
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
    });
    this.db = new Db(this.pool, { leaseMs: this.leaseMs, backoffBaseMs: opts.backoffBaseMs, backoffMaxMs: opts.backoffMaxMs });
    this.work = new WorkService(this.db);
    this.startCheck = new StartCheck(this.work);
    this.flows = new FlowService(this.db);
    this.heard = new HeardQueues(this.log, () => this.claimer.wake(`${NOTIFIED}(wake-up barrier again)`));
    this.listener = new Listener({
      url: opts.listenUrl ?? opts.databaseUrl,
      channels: [JOBS_CHANNEL, CONTROL_CHANNEL],
      liveness: true,
      probePool: this.pool,
      applicationName: `herald:worker-listener:${process.pid}`,
      logger: this.log,
    });
  }

  async start(): Promise<void> {
    try {
      await this.init();
    } catch (err) {
      await this.listener.close();
      await this.pool.end();
      throw err;
    }
  }

  private async init(): Promise<void> {
    const { opts, log } = this;
    this.tasks = await loadTasks({ dir: opts.tasksDir, tasks: opts.tasks, logger: log });
    const kinds = [...this.tasks.keys()];
    const capabilities = opts.capabilities ?? [];
    const queues = this.queues ? [...this.queues] : undefined;

    this.completions = new Completions({
      work: this.work,
      worker: this.id,
      logger: log,
      writing: (leases, now) => this.slots.writing(leases, now),
      settled: (lease) => this.slots.settled(lease),
    });
    const maxClaim = opts.maxClaim ?? DEFAULTS.maxClaim;
    const durable = new DurableService(this.db);
    const aheadMs = opts.claimAheadMs ?? DEFAULTS.claimAheadMs;
    const maxAhead = Math.max(0, maxClaim - opts.concurrency);
    this.slots = new Slots({
      capacity: opts.concurrency,
      maxUnwritten: Math.max(2 * opts.concurrency, MAX_UNWRITTEN),
      // Only while claims come back full: a short queue is left to whichever worker is free.
      ahead: () => (aheadMs > 0 && this.claimer.backlogged ? Math.min(maxAhead, this.slots.pace.within(aheadHorizon(aheadMs, this.claimMs))) : 0),
      worker: this.id,
      tasks: this.tasks,
      logger: log,
      progress: (a, percent, message) => this.progress(a, percent, message),
      succeeded: (a, result) => this.completions.succeed(a, result),
      // A durable step's work that threw is named with the error (last_error.step).
      failed: (a, error, final) => {
        const threw = a.durable?.failed;
        this.completions.fail(a, error, final, threw && threw.error === error ? threw.step : undefined);
      },
      freed: () => this.claimer.slotFreed(),
      parents: (jobId) => this.flows.parents(jobId),
      admit: (jobs) => this.startCheck.mayStart(jobs),
      refused: (leases) => void this.buffer.handBack(leases, 'queue paused or limited, or expireAt passed, while buffered'),
      // A sleep this worker ends is due at a time it knows: claim then, not after a poll finds it.
      durable: { service: durable, worker: this.id, steps: new StepWriter(durable, this.id, log), wakeAt: (at) => this.claimer.dueAtTime(at) },
    });
    this.held = new HeldQueues(this.work, log, this.queues);
    const pollMs = opts.pollMs ?? DEFAULTS.pollMs;
    this.buffer = new BufferedJobs({
      work: this.work,
      worker: this.id,
      held: this.held,
      slots: this.slots,
      logger: log,
      ttlMs: opts.claimAheadTtlMs ?? DEFAULTS.claimAheadTtlMs,
      pollMs,
    });
    const round = new ClaimRound({
      work: this.work, held: this.held, heard: this.heard, slots: this.slots, worker: this.id, leaseMs: this.leaseMs,
      queues, capabilities, kinds,
      ownerLock: () => this.listener.lockKey,
      // A claim sent with a key the listener has since lost: renew now, recording the current one.
      ownerChanged: () => this.leases.renewNow(),
      deadline: (sentAt) => this.leases.deadline(sentAt),
      dueAt: (at) => this.claimer.dueAtTime(at),
    });
    this.claimer = new Claimer({
      pollMs,
      maxBatch: maxClaim,
      logger: log,
      freeSlots: () => this.slots.free,
      claim: async (limit, reason) => {
        // The settings are re-read at least once a poll interval, in case a notification was
        // missed. A round woken by new work does not wait for that read: a stale cache can only
        // delay a limited queue's job, and the rounds after it use the new settings.
        if (this.buffer.settingsAgeMs() > pollMs) {
          const reading = this.buffer.refreshHeld();
          if (!reason.startsWith(NOTIFIED)) await reading;
        }
        const t0 = performance.now();
        const got = await round.run(limit);
        // Smoothed over a few claims: it sizes the claim-ahead (see aheadHorizon).
        const ms = performance.now() - t0;
        this.claimMs = this.claimMs === undefined ? ms : 0.8 * this.claimMs + 0.2 * ms;
        return got;
      },
      nextRunAt: async (sinceMs) => (await this.work.nextRunAt(queues, capabilities, kinds, sinceMs))?.getTime() ?? null,
    });
    this.leases = new LeaseKeeper({
      work: this.work,
      worker: this.id,
      leaseMs: this.leaseMs,
      lockLossGraceMs: opts.lockLossGraceMs ?? DEFAULTS.lockLossGraceMs,
      logger: log,
      ownerLock: () => this.listener.lockKey,
      held: () => this.slots.leases(),
      lost: (leases) => {
        for (const l of leases) {
          if (this.slots.abandon(l, new LeaseLostError(l.id, l.attempt, this.id))) {
            log.warn({ job: l.id, attempt: l.attempt }, 'lease lost at renewal: handler aborted, its outcome will not be written');
          }
        }
      },
      cancelRequested: (leases) => {
        for (const l of leases) if (this.slots.cancel(l)) log.info({ job: l.id, attempt: l.attempt }, 'cancel requested: handler aborted');
      },
      renewed: (leases, deadline) => this.slots.renewed(leases, deadline),
      cutShort: (deadline) => this.slots.cutShort(deadline),
      overdue: (now) => {
        const late = this.slots.overdue(now, (l) => new LeaseExpiredError(l.id, l.attempt, this.id));
        for (const l of late) log.warn({ job: l.id, attempt: l.attempt }, 'no renewal reached the database before the lease ran out: handler aborted, its outcome will not be written');
      },
    });
    this.registry = new Registry({
      registry: new RegistryService(this.db),
      logger: log,
      id: this.id,
      queues: queues ?? null,
      kinds,
      capabilities,
      concurrency: opts.concurrency,
      lockKey: () => this.listener.lockKey,
    });
    this.maintenance = new Maintenance({
      maintain: new MaintainService(this.db),
      logger: log,
      retentionMs: opts.retentionMs ?? DEFAULTS.retentionMs,
      reapEveryMs: opts.reapEveryMs,
      lockLossGraceMs: opts.lockLossGraceMs,
    });

    this.listener.on('notification', (channel, payload) => this.notified(channel, payload));
    // Cut off: renew at once without a key, so our jobs are left to their leases, not to the
    // short grace the reaper gives jobs whose key vanished (see queue/sql/reap.ts).
    this.listener.on('state', (state) => {
      if (state === 'down') this.leases.cut();
    });
    // After every (re)connect, one claim covers whatever was announced while we were away.
    this.listener.on('connected', () => {
      this.registry.refresh();
      // A reaper may have seen our liveness lock missing while we were cut off and shortened
      // our leases: renewing now keeps our jobs ours (see queue/sql/reap.ts).
      this.leases.renewNow();
      // A settings change announced while we were away is missed too: re-read them, so jobs
      // buffered for a queue paused meanwhile go back now, not at the buffer's TTL.
      void Promise.all([this.hearAll(), this.buffer.refreshHeld()]).then(() => this.claimer.wake('listener connected'));
    });
    // One info line once it runs (below); this one is for tracing a start that hangs.
    log.debug('worker starting');
    const listening = await this.listener.start();
    await this.registry.start();
    await this.buffer.refreshHeld();
    this.claimer.start();
    if (opts.scheduler ?? true) {
      this.scheduler = new Scheduler(new ScheduleService(this.db), log);
      this.scheduler.start();
    }
    this.leases.start();
    this.maintenance.start();
    this.buffer.start();
    if (!listening) this.claimer.wake('start (polling only)');
    log.info({ listening, queues: queues ?? 'all', concurrency: opts.concurrency, kinds, capabilities }, 'worker started');
  }

  private notified(channel: string, payload: string): void {
    if (channel === JOBS_CHANNEL) {
      const { queue, at } = parseJobsPayload(payload);
      if (this.queues && !this.queues.has(queue)) return;
      if (at === null) {
        this.heard.add(queue);
        this.claimer.wake(`${NOTIFIED}${queue}`);
      } else this.claimer.dueAtTime(at);
    } else if (channel === CONTROL_CHANNEL && payload === `cancel ${this.id}`) {
      // The renewal's answer says which of our jobs were asked to cancel.
      this.leases.renewNow();
    } else if (channel === CONTROL_CHANNEL && payload === 'schedules') {
      this.scheduler?.changed();
    } else if (channel === CONTROL_CHANNEL && payload === 'queues') {
      // Settings changed: jobs claimed ahead of a queue now paused or limited go back (see
      // BufferedJobs), and a resumed or newly limited queue may have work for us.
      this.startCheck.forget();
      void this.buffer.refreshHeld().then(() => this.claimer.wake('queue settings changed'));
    }
  }

  /**
   * Before the first claim after a (re)connect: the notifications sent while we were not listening
   * are lost, and a producer that committed beside one of their senders skipped its own NOTIFY and
   * may not have committed yet. So that claim passes the barriers of every queue we take from, as
   * if each had been heard (for a worker of all queues: each queue with jobs; unread, the poll
   * covers it).
   */
  private async hearAll(): Promise<void> {
    let queues: string[];
    try {
      queues = this.queues ? [...this.queues] : await this.work.countedQueues();
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'could not read the queues to catch up on; the poll covers them');
      return;
    }
    for (const q of queues) this.heard.add(q);
  }

  private async progress(a: ActiveJob, percent: number, message?: string): Promise<void> {
    if (!this.slots.isRunning(a.lease)) return;
    let r: { held: boolean; cancelRequested: boolean };
    try {
      r = await this.work.progress(this.id, a.lease, percent, message ?? null);
    } catch (err) {
      if (err instanceof ValidationError) throw err;
      // Progress is best effort: a database hiccup must not fail the job.
      this.log.warn({ err: (err as Error).message, job: a.lease.id }, 'progress report failed');
      return;
    }
    this.log.debug({ job: a.lease.id, attempt: a.lease.attempt, percent, message, held: r.held }, 'progress');
    if (!r.held) {
      if (this.slots.abandon(a.lease, new LeaseLostError(a.lease.id, a.lease.attempt, this.id))) {
        this.log.warn({ job: a.lease.id, attempt: a.lease.attempt }, 'lease lost at progress report: handler aborted, its outcome will not be written');
      }
    } else if (r.cancelRequested && this.slots.cancel(a.lease)) {
      this.log.info({ job: a.lease.id, attempt: a.lease.attempt }, 'cancel requested: handler aborted');
    }
  }

  /**
   * Graceful stop: no new claims; running jobs get `shutdownGraceMs` to finish; the rest are
   * released (attempt not burned) and their signals fire; outcomes are flushed; then the
   * listener and pool close.
   */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    const { log } = this;
    const graceMs = this.opts.shutdownGraceMs ?? DEFAULTS.shutdownGraceMs;
    log.info({ running: this.slots.running().length, graceMs }, 'worker stopping: no new claims');
    await Promise.all([this.claimer.stop(), this.maintenance.stop(), this.scheduler?.stop()]);
    this.buffer.stop();
    // Off the list before the grace period: nothing new comes to this worker.
    await this.registry.stop();
    // Jobs that never started go back at once; only running ones get the grace period.
    await this.buffer.returnAll(0, 'shutdown');
    if (!(await this.slots.whenIdle(graceMs))) {
      const leases = this.slots.running().map((a) => a.lease);
      for (const l of leases) this.slots.abandon(l, new ShutdownError(this.id));
      try {
        const lost = await this.work.release(this.id, leases);
        log.warn({ released: leases.length - lost.length, lost: lost.length }, 'grace period over: released unfinished jobs');
      } catch (err) {
        log.error({ err: (err as Error).message }, 'could not release unfinished jobs; the reaper will requeue them');
      }
    }
    await this.completions.drain();
    await this.leases.stop();
    await this.listener.close();
    await this.pool.end();
    log.info('worker stopped');
  }
}

// The Queue facade: every core method under one name, over the services in services/ (one per
// concern, each on the shared database handle). Why it stays: library users, the CLI, the bench
// and the test suite call `queue.enqueue(...)`, `queue.get(...)` on one object, and the server's
// routes span five services. It builds each service on first use, so a process carries only the
// state of what it calls: the enqueue coalescer once it produces, the feed horizon once it
// streams. The worker does not use it: it builds its services itself (worker/worker.ts).
// The SQL is in sql/, run only by the services.
import type pg from 'pg';
import type { Cursor } from './cursor.ts';
import type { HistoryRange } from './history.ts';
import type { Actor } from './schema/index.ts';
import type { BulkAction } from './defaults.ts';
import type { JobFilter } from './search.ts';
import { AdminService } from './services/admin.ts';
import { Db, type QueueOptions } from './services/db.ts';
import { FeedService } from './services/feed.ts';
import { FlowService, type FlowJobInput, type FlowStatus } from './services/flows.ts';
import { DurableService } from './services/durable.ts';
import type { EnqueueInput } from './services/insert.ts';
import { MaintainService, type EventDropOptions, type EventPartitionOptions } from './services/maintain.ts';
import { ProduceService } from './services/produce.ts';
import { ReadService, type ListOptions } from './services/read.ts';
import { RegistryService, type WorkerRegistration } from './services/registry.ts';
import { ScheduleService, type ScheduleInput } from './services/schedules.ts';
import type { QueueSettingsPatch } from './services/settings.ts';
import { WorkService, type ClaimRequest, type Lease } from './services/work.ts';

export type { Actor };
export type { QueueOptions } from './services/db.ts';
export type { EnqueueInput, Enqueued } from './services/insert.ts';
export type { BulkResult } from './services/admin.ts';
export type { FeedHolder } from './services/feed.ts';
export type { FlowJobInput, FlowStatus } from './services/flows.ts';
export type { Step } from './services/durable.ts';
export type { JobPage, ListOptions } from './services/read.ts';
export type { WorkerInfo, WorkerRegistration } from './services/registry.ts';
export type { Schedule, ScheduleInput } from './services/schedules.ts';
export type { QueueCount, QueueInfo, QueueSettingsPatch } from './services/settings.ts';
export { toErrorInfo, type ClaimRequest, type ErrorInfo, type Lease } from './services/work.ts';

export class Queue {
  /** The handle the services share (pool, statement runner, lease and backoff options). */
  readonly db: Db;
  private produceService?: ProduceService;
  private workService?: WorkService;
  private adminService?: AdminService;
  private scheduleService?: ScheduleService;
  private maintainService?: MaintainService;
  private registryService?: RegistryService;
  private readService?: ReadService;
  private feedService?: FeedService;
  private flowService?: FlowService;
  private durableService?: DurableService;

  constructor(readonly pool: pg.Pool, opts: QueueOptions = {}) {
    this.db = new Db(pool, opts);
  }

  get leaseMs(): number {
    return this.db.leaseMs;
  }
  get backoffBaseMs(): number {
    return this.db.backoffBaseMs;
  }
  get backoffMaxMs(): number {
    return this.db.backoffMaxMs;
  }

  private get producing() {
    return (this.produceService ??= new ProduceService(this.db));
  }
  private get working() {
    return (this.workService ??= new WorkService(this.db));
  }
  private get admin() {
    return (this.adminService ??= new AdminService(this.db));
  }
  private get scheduling() {
    return (this.scheduleService ??= new ScheduleService(this.db));
  }
  private get maintaining() {
    return (this.maintainService ??= new MaintainService(this.db));
  }
  private get registry() {
    return (this.registryService ??= new RegistryService(this.db));
  }
  private get reading() {
    return (this.readService ??= new ReadService(this.db));
  }
  private get feeding() {
    return (this.feedService ??= new FeedService(this.db));
  }
  private get durable() {
    return (this.durableService ??= new DurableService(this.db));
  }
  private get flowing() {
    return (this.flowService ??= new FlowService(this.db));
  }

  // ---- producing (services/produce.ts) ----
  enqueue(input: EnqueueInput) { return this.producing.enqueue(input); }
  enqueueMany(inputs: EnqueueInput[]) { return this.producing.enqueueMany(inputs); }

  // ---- working (services/work.ts) ----
  claim(req: ClaimRequest) { return this.working.claim(req); }
  claimLimited(queue: string, req: Omit<ClaimRequest, 'queues'>) { return this.working.claimLimited(queue, req); }
  heldQueues() { return this.working.heldQueues(); }
  startGate() { return this.working.startGate(); }
  nextRunAt(queues?: string[], capabilities?: string[], kinds?: string[], sinceMs?: number) { return this.working.nextRunAt(queues, capabilities, kinds, sinceMs); }
  heartbeat(worker: string, leases: Lease[], leaseMs?: number, ownerLock?: number | null) { return this.working.heartbeat(worker, leases, leaseMs, ownerLock); }
  progress(worker: string, lease: Lease, percent: number, message?: string | null) { return this.working.progress(worker, lease, percent, message); }
  complete(worker: string, done: (Lease & { result: unknown })[]) { return this.working.complete(worker, done); }
  fail(worker: string, failed: (Lease & { error: unknown; final?: boolean })[]) { return this.working.fail(worker, failed); }
  release(worker: string, leases: Lease[]) { return this.working.release(worker, leases); }

  // ---- administration (services/admin.ts) ----
  cancel(id: string, actor?: Actor) { return this.admin.cancel(id, actor); }
  /** Sends signal `name` to a job: kept until its handler waits for it, or wakes it now. */
  signal(id: string, name: string, payload?: unknown, actor?: Actor) { return this.durable.signal(id, name, payload, actor); }
  /** A durable job's steps, in the order they finished. */
  steps(id: string) { return this.durable.steps(id); }
  /** Jobs whose durable handler sleeps or waits now, by queue and wait. */
  durableWaiting() { return this.durable.waiting(); }
  retry(id: string, actor?: Actor) { return this.admin.retry(id, actor); }
  /** Makes a job waiting out its backoff or its runAt due now. */
  runNow(id: string, actor?: Actor) { return this.admin.runNow(id, actor); }
  bulkDryRun(action: BulkAction, filter: JobFilter) { return this.admin.bulkDryRun(action, filter); }
  bulk(action: BulkAction, filter: JobFilter, opts?: { actor?: Actor; batchSize?: number }) { return this.admin.bulk(action, filter, opts); }
  patchQueue(queue: string, patch: QueueSettingsPatch, actor?: Actor) { return this.admin.patchQueue(queue, patch, actor); }

  // ---- schedules (services/schedules.ts) ----
  putSchedule(name: string, input: ScheduleInput) { return this.scheduling.putSchedule(name, input); }
  deleteSchedule(name: string) { return this.scheduling.deleteSchedule(name); }
  schedules() { return this.scheduling.schedules(); }
  runSchedule(name: string, actor?: Actor) { return this.scheduling.runSchedule(name, actor); }
  fireDueSchedules() { return this.scheduling.fireDueSchedules(); }
  nextScheduleDue() { return this.scheduling.nextScheduleDue(); }

  // ---- housekeeping (services/maintain.ts) ----
  reap(limit?: number, graceMs?: number) { return this.maintaining.reap(limit, graceMs); }
  expire(limit?: number) { return this.maintaining.expire(limit); }
  pruneQueueStarts() { return this.maintaining.pruneQueueStarts(); }
  pruneWorkers() { return this.maintaining.pruneWorkers(); }
  cleanup(olderThanMs: number, batchSize?: number) { return this.maintaining.cleanup(olderThanMs, batchSize); }
  dropEventPartitions(olderThanMs: number, lockMs?: number, opts?: EventDropOptions) { return this.maintaining.dropEventPartitions(olderThanMs, lockMs, opts); }
  prepareEventPartitions(opts?: EventPartitionOptions) { return this.maintaining.prepareEventPartitions(opts); }
  rollupHistory(batchSize?: number) { return this.maintaining.rollupHistory(batchSize); }
  foldCounts() { return this.maintaining.foldCounts(); }

  // ---- the worker registry (services/registry.ts) ----
  registerWorker(w: WorkerRegistration) { return this.registry.registerWorker(w); }
  touchWorker(id: string, lockKey: number | null) { return this.registry.touchWorker(id, lockKey); }
  unregisterWorker(id: string) { return this.registry.unregisterWorker(id); }

  // ---- reading (services/read.ts) ----
  get(id: string) { return this.reading.get(id); }
  list(q?: JobFilter & ListOptions) { return this.reading.list(q); }
  counts(queue?: string) { return this.reading.counts(queue); }
  events(jobId: string) { return this.reading.events(jobId); }
  eventPage(jobId: string, opts?: { after?: string; limit?: number }) { return this.reading.eventPage(jobId, opts); }
  history(queue: string, range: HistoryRange, now?: number) { return this.reading.history(queue, range, now); }
  workers() { return this.reading.workers(); }
  tableStats() { return this.reading.tableStats(); }
  queueHeads() { return this.reading.queueHeads(); }

  // ---- the event feed (services/feed.ts) ----
  learnOtherDatabases() { return this.feeding.learnOtherDatabases(); }
  feed(after?: Cursor, limit?: number) { return this.feeding.feed(after, limit); }
  feedThrough(after: Cursor, through: Cursor, limit?: number, filter?: { jobId?: string; queue?: string; flowId?: string }) {
    return this.feeding.feedThrough(after, through, limit, filter);
  }
  recentEvents(through: Cursor, limit: number, queue?: string) { return this.feeding.recent(through, limit, queue ?? null); }
  backlog(after: Cursor) { return this.feeding.backlog(after); }
  passEventsBarrier() { return this.feeding.passEventsBarrier(); }
  feedHolder(after: Cursor) { return this.feeding.feedHolder(after); }
  head() { return this.feeding.head(); }
  retentionHorizon() { return this.feeding.retentionHorizon(); }
  liveStart() { return this.feeding.liveStart(); }

  // ---- workflows (services/flows.ts) ----
  createFlow(name: string | null, jobs: FlowJobInput[]) { return this.flowing.create(name, jobs); }
  flow(id: string) { return this.flowing.get(id); }
  flows(q?: { status?: FlowStatus; before?: string; limit?: number }) { return this.flowing.list(q); }
  cancelFlow(id: string, actor?: Actor) { return this.flowing.cancel(id, actor); }
  retryFlow(id: string, actor?: Actor) { return this.flowing.retry(id, actor); }
  parents(jobId: string) { return this.flowing.parents(jobId); }
  relatives(jobId: string) { return this.flowing.relatives(jobId); }
}

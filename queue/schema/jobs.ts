// The jobs table: one row per job, in every status.
import { sql } from 'drizzle-orm';
import { bigint, boolean, check, customType, index, integer, jsonb, smallint, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { DEFAULTS } from '../defaults.ts';
import { herald, tstz } from './base.ts';

// 'blocked': waiting for its parents (workflows); added last, as PostgreSQL appends enum values.
export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'blocked'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const jobStatus = herald.enum('job_status', JOB_STATUSES);

/** A running job's last progress report (jobs.progress). */
export interface JobProgress {
  percent: number;
  message: string | null;
}

/** What a sleeping or waiting job waits for (jobs.wait): its wake-up time, a signal or an invoked child. */
export interface JobWait {
  type: 'sleep' | 'signal' | 'child';
  name?: string;
  until?: string;
  childId?: string;
}

/** What a failed attempt left (jobs.last_error): the error's {message, name, stack}, truncated, or the core's reason. */
export interface JobError {
  message: string;
  /** A durable job's step (ctx.step) whose work threw the error. */
  step?: string;
  [k: string]: unknown;
}

/** What a parent's failure does to a waiting child: cancel it (down the graph) or run it anyway. */
export const ON_PARENT_FAILURE = ['cancel', 'run'] as const;
export type OnParentFailure = (typeof ON_PARENT_FAILURE)[number];

// A column whose rule reads that value alone is of a domain, herald.job_<column>, holding the rule
// as a CHECK named like the table check it replaced (queue/errors.ts words each). PostgreSQL parses
// and plans a table's CHECKs again for every statement that writes a row (about 90 µs of a one-job
// INSERT when these were table checks), while a domain's check is prepared once per session, and an
// UPDATE tests it only on the columns it sets (a claim sets only progress, to NULL). The rules
// themselves are in the migration that made the domains (drizzle/0026_job_domains.sql).
// (The two-argument call keeps the SQL name in the column's type.)
const domain = <T>() => <Name extends string>(column: Name) =>
  customType<{ data: T; driverData: T }>({ dataType: () => `herald.job_${column}` })(column, undefined);

// The one declaration of a job's shape: the row types (queue/sql/rows.ts) and the Job JSON
// (queue/job.ts) are derived from it.
export const jobs = herald.table(
  'jobs',
  {
    id: bigint('id', { mode: 'bigint' }).primaryKey().generatedAlwaysAsIdentity(),
    queue: domain<string>()('queue').notNull().default(DEFAULTS.queue),
    kind: domain<string>()('kind').notNull(),
    payload: jsonb('payload').notNull().default({}),
    priority: smallint('priority').notNull().default(DEFAULTS.priority),
    status: jobStatus('status').notNull().default('queued'),
    attempt: integer('attempt').notNull().default(0),
    maxAttempts: domain<number>()('max_attempts').notNull().default(DEFAULTS.maxAttempts),
    availableAt: tstz('available_at').notNull().defaultNow(),
    createdAt: tstz('created_at').notNull().defaultNow(),
    startedAt: tstz('started_at'),
    finishedAt: tstz('finished_at'),
    lockedBy: text('locked_by'),
    leaseExpiresAt: tstz('lease_expires_at'),
    // Key of the session advisory lock the owner holds while alive; the reaper requeues
    // a running job at once when that lock is gone (Postgres drops it when the owner's process
    // dies), instead of waiting out the lease. Null: lease only.
    ownerLock: integer('owner_lock'),
    requires: domain<string[]>()('requires').notNull().default(sql`'{}'::text[]`),
    idempotencyKey: domain<string>()('idempotency_key'),
    progress: domain<JobProgress>()('progress'),
    result: jsonb('result'),
    lastError: jsonb('last_error').$type<JobError>(),
    cancelRequestedAt: tstz('cancel_requested_at'),
    // The key of per-group limits (one tenant, one customer); null: in no group.
    group: domain<string>()('group'),
    tags: domain<string[]>()('tags').notNull().default(sql`'{}'::text[]`),
    // An attempt running longer fails; null: no limit.
    timeoutMs: domain<number>()('timeout_ms'),
    // A job still queued then never starts: it becomes cancelled (event 'expired').
    expireAt: tstz('expire_at'),
    // A dead-letter copy: the job whose terminal failure made it, and that job's queue (where a
    // redrive sends it back; kept here because retention may delete the source first).
    deadLetterOf: bigint('dead_letter_of', { mode: 'bigint' }),
    sourceQueue: text('source_queue'),
    // The W3C traceparent of the span that enqueued the job; null when no span was recording.
    trace: text('trace'),
    // Workflows. flow_id/ref: the flow that made the job and its name there. on_parent_failure is
    // set exactly when the job has parents ('cancel' | 'run'), so jobs without any skip every
    // dependency read. has_children: some job waits on this one; the triggers do flow work only
    // for finished rows that have it, so a job outside any workflow costs nothing more.
    flowId: bigint('flow_id', { mode: 'bigint' }),
    ref: domain<string>()('ref'),
    onParentFailure: domain<OnParentFailure>()('on_parent_failure'),
    // Null, not false, on plain jobs: nothing stored for them.
    hasChildren: boolean('has_children'),
    // How many of its parents have not ended (set exactly when on_parent_failure is): a parent's
    // end counts it down under the child's lock, so settling a child never reads its other parents.
    waitingOn: integer('waiting_on'),
    // Why a queued job sleeps or waits (durable handlers: ctx.sleep, waitFor, invoke); null on
    // every other job. Meaningful only while the job is queued: its next run clears it.
    wait: jsonb('wait').$type<JobWait>(),
    // A job made by ctx.invoke: the job that waits for it. Its end makes that job claimable in
    // the same transaction (the update trigger); null on every other job.
    invokedBy: bigint('invoked_by', { mode: 'bigint' }),
  },
  (t) => [
    // Row shape of each status: the database refuses a malformed row (a running job without an
    // owner or lease, a finished one still locked), whichever code path wrote it.
    check(
      'jobs_queued_shape',
      sql`${t.status} <> 'queued' OR (${t.lockedBy} IS NULL AND ${t.leaseExpiresAt} IS NULL AND ${t.ownerLock} IS NULL AND ${t.finishedAt} IS NULL)`,
    ),
    check(
      'jobs_running_shape',
      sql`${t.status} <> 'running' OR (${t.lockedBy} IS NOT NULL AND ${t.leaseExpiresAt} IS NOT NULL AND ${t.startedAt} IS NOT NULL AND ${t.finishedAt} IS NULL)`,
    ),
    check(
      'jobs_terminal_shape',
      sql`${t.status} NOT IN ('succeeded', 'failed', 'cancelled') OR (${t.finishedAt} IS NOT NULL AND ${t.lockedBy} IS NULL AND ${t.leaseExpiresAt} IS NULL AND ${t.ownerLock} IS NULL)`,
    ),
    // A blocked row is shaped like a queued one. Compared as text: the migration that adds the
    // enum value cannot use it as an enum in the same transaction.
    check(
      'jobs_blocked_shape',
      sql`${t.status}::text <> 'blocked' OR (${t.lockedBy} IS NULL AND ${t.leaseExpiresAt} IS NULL AND ${t.ownerLock} IS NULL AND ${t.finishedAt} IS NULL)`,
    ),
    check('jobs_attempt_range', sql`${t.attempt} BETWEEN 0 AND ${t.maxAttempts}`),
    // The claim order, over queued rows only: the hot index.
    index('jobs_claim_order')
      .on(t.priority.desc(), t.availableAt, t.createdAt, t.id)
      .where(sql`${t.status} = 'queued'`),
    // The reaper's scan for expired leases.
    index('jobs_lease_expiry').on(t.leaseExpiresAt).where(sql`${t.status} = 'running'`),
    // Retention cleanup: oldest finished first.
    index('jobs_finished').on(t.finishedAt).where(sql`${t.status} IN ('succeeded', 'failed', 'cancelled')`),
    // Listing newest first, by queue.
    index('jobs_queue_id').on(t.queue, t.id.desc()),
    // Listing by status (and queue): the statuses no partial index below covers, so a status with
    // no match is one probe. Queued and running rows stay out, so claims never write it.
    index('jobs_status_queue').on(t.status, t.queue, t.id.desc()).where(sql`${t.status} NOT IN ('queued', 'running')`),
    // Listing by kind (and queue).
    index('jobs_kind_queue').on(t.kind, t.queue, t.id.desc()),
    // Running jobs by queue and group: what the limits of a queue count.
    index('jobs_running_queue').on(t.queue, t.group).where(sql`${t.status} = 'running'`),
    // The expiry pass: only jobs that have an expireAt, while they wait.
    index('jobs_expiry').on(t.expireAt).where(sql`${t.status} = 'queued' AND ${t.expireAt} IS NOT NULL`),
    // The oldest queued job of each queue (the stalled-queue metric walks it queue by queue).
    index('jobs_queued_queue').on(t.queue, t.availableAt).where(sql`${t.status} = 'queued'`),
    // A flow's jobs and their statuses (flow pages, counts, the flow filter); only rows of flows.
    index('jobs_flow').on(t.flowId, t.status).where(sql`${t.flowId} IS NOT NULL`),
    // A source's dead-letter copies (the trigger replaces an older one; a redrive takes the newest).
    index('jobs_dead_letter_of').on(t.deadLetterOf).where(sql`${t.deadLetterOf} IS NOT NULL`),
    // Jobs whose durable handler sleeps or waits (jobs.wait): the waitingFor filter and the
    // herald_jobs_waiting metric read only these rows, not every queued one.
    index('jobs_waiting').on(t.queue, t.id.desc()).where(sql`${t.status} = 'queued' AND ${t.wait} IS NOT NULL`),
    uniqueIndex('jobs_idempotency_key').on(t.idempotencyKey).where(sql`${t.idempotencyKey} IS NOT NULL`),
  ],
);

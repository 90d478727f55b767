// The two tables, as drizzle sees them. `npm run db:generate` turns this file into the
// table migration in drizzle/; triggers and functions are in the hand-written migration.
import { sql } from 'drizzle-orm';
import { DEFAULTS, MAX_ATTEMPTS_LIMIT, MAX_TAGS, MAX_TIMEOUT_MS, QUEUE_LIMITS } from './defaults.ts';
import {
  bigint,
  boolean,
  check,
  customType,
  index,
  integer,
  jsonb,
  pgSchema,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

export const herald = pgSchema('herald');

// 'blocked': waiting for its parents (workflows); added last, as PostgreSQL appends enum values.
export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'blocked'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const jobStatus = herald.enum('job_status', JOB_STATUSES);

export const EVENT_TYPES = [
  'enqueued',
  'claimed',
  'progress',
  'succeeded',
  'retry_scheduled',
  'failed',
  'cancel_requested',
  'cancelled',
  'lease_expired',
  'released',
  'retried',
  'expired',
  'unblocked',
  // A bulk delete removed the job (its row is gone; this event stays, so live views drop it).
  'deleted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const eventType = herald.enum('event_type', EVENT_TYPES);

// xid8: the writing transaction's id, which orders the event feed (see queue/sql/feed.ts).
const xid8 = customType<{ data: string }>({ dataType: () => 'xid8' });

const tstz = <Name extends string>(name: Name) => timestamp(name, { withTimezone: true, mode: 'date' });

// Names are 1-128 of [A-Za-z0-9_.:-] (safe in URLs, NOTIFY payloads and logs); the database enforces it
// as well as the HTTP schema, so no writer can store another.
const NAME_CHARS = '[A-Za-z0-9_.:-]{1,128}';
const NAME_PATTERN = `'^${NAME_CHARS}$'`;

/** A running job's last progress report (jobs.progress). */
export interface JobProgress {
  percent: number;
  message: string | null;
}

/** What a failed attempt left (jobs.last_error): the error's {message, name, stack}, truncated, or the core's reason. */
export interface JobError {
  message: string;
  [k: string]: unknown;
}

/** What a parent's failure does to a waiting child: cancel it (down the graph) or run it anyway. */
export const ON_PARENT_FAILURE = ['cancel', 'run'] as const;
export type OnParentFailure = (typeof ON_PARENT_FAILURE)[number];

// The one declaration of a job's shape: the row types (queue/sql/rows.ts) and the Job JSON
// (queue/job.ts) are derived from it.
export const jobs = herald.table(
  'jobs',
  {
    id: bigint('id', { mode: 'bigint' }).primaryKey().generatedAlwaysAsIdentity(),
    queue: text('queue').notNull().default(DEFAULTS.queue),
    kind: text('kind').notNull(),
    payload: jsonb('payload').notNull().default({}),
    priority: smallint('priority').notNull().default(DEFAULTS.priority),
    status: jobStatus('status').notNull().default('queued'),
    attempt: integer('attempt').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull().default(DEFAULTS.maxAttempts),
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
    requires: text('requires').array().notNull().default(sql`'{}'::text[]`),
    idempotencyKey: text('idempotency_key'),
    progress: jsonb('progress').$type<JobProgress>(),
    result: jsonb('result'),
    lastError: jsonb('last_error').$type<JobError>(),
    cancelRequestedAt: tstz('cancel_requested_at'),
    // The key of per-group limits (one tenant, one customer); null: in no group.
    group: text('group'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    // An attempt running longer fails; null: no limit.
    timeoutMs: integer('timeout_ms'),
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
    ref: text('ref'),
    onParentFailure: text('on_parent_failure').$type<OnParentFailure>(),
    // Null, not false, on plain jobs: nothing stored for them.
    hasChildren: boolean('has_children'),
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
    check('jobs_ref_name', sql`${t.ref} ~ ${sql.raw(NAME_PATTERN)}`),
    check('jobs_on_parent_failure', sql`${t.onParentFailure} IN ('cancel', 'run')`),
    check('jobs_queue_name', sql`${t.queue} ~ ${sql.raw(NAME_PATTERN)}`),
    check('jobs_kind_name', sql`${t.kind} ~ ${sql.raw(NAME_PATTERN)}`),
    check('jobs_max_attempts_range', sql`${t.maxAttempts} BETWEEN 1 AND ${sql.raw(String(MAX_ATTEMPTS_LIMIT))}`),
    check('jobs_attempt_range', sql`${t.attempt} BETWEEN 0 AND ${t.maxAttempts}`),
    check('jobs_requires_count', sql`cardinality(${t.requires}) <= 32`),
    check('jobs_group_name', sql`${t.group} ~ ${sql.raw(NAME_PATTERN)}`),
    // Every tag obeys the name rules: the list joined with ',' (not a name character) matches
    // name(,name)*, and splitting it again gives the same list back, so no tag held a ',' or a NULL.
    check(
      'jobs_tags_names',
      sql`cardinality(${t.tags}) <= ${sql.raw(String(MAX_TAGS))} AND (cardinality(${t.tags}) = 0 OR (array_to_string(${t.tags}, ',') ~ ${sql.raw(`'^${NAME_CHARS}(,${NAME_CHARS})*$'`)} AND string_to_array(array_to_string(${t.tags}, ','), ',') = ${t.tags}))`,
    ),
    check('jobs_timeout_range', sql`${t.timeoutMs} BETWEEN 1 AND ${sql.raw(String(MAX_TIMEOUT_MS))}`),
    check('jobs_idempotency_key_length', sql`length(${t.idempotencyKey}) BETWEEN 1 AND 255`),
    check(
      'jobs_progress_shape',
      sql`${t.progress} IS NULL OR (jsonb_typeof(${t.progress}->'percent') = 'number' AND (${t.progress}->>'percent')::numeric BETWEEN 0 AND 100)`,
    ),
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
    uniqueIndex('jobs_idempotency_key').on(t.idempotencyKey).where(sql`${t.idempotencyKey} IS NOT NULL`),
  ],
);

// Append-only: one row per transition, written by the statement-level triggers on jobs.
// No foreign key: RI checks are row-level triggers, which would undo the batching.
export const jobEvents = herald.table(
  'job_events',
  {
    id: bigint('id', { mode: 'bigint' }).notNull().generatedAlwaysAsIdentity(),
    jobId: bigint('job_id', { mode: 'bigint' }).notNull(),
    tx: xid8('tx').notNull().default(sql`pg_current_xact_id()`),
    at: tstz('at').notNull().defaultNow(),
    queue: text('queue').notNull(),
    kind: text('kind').notNull(),
    type: eventType('type').notNull(),
    status: jobStatus('status').notNull(),
    attempt: integer('attempt').notNull(),
    worker: text('worker'),
    data: jsonb('data'),
    // The job's flow (null outside workflows): the stream's ?flow= filter reads it.
    flowId: bigint('flow_id', { mode: 'bigint' }),
  },
  (t) => [
    // Two indexes, each written for every event: the key is the gap-free feed's order, (tx, id),
    // read below the transaction horizon; a job's timeline is found by job_id (a few rows, sorted
    // by id after). A separate key on id alone would be a third index that nothing reads.
    primaryKey({ name: 'job_events_pkey', columns: [t.tx, t.id] }),
    index('job_events_job').on(t.jobId),
  ],
);

// Jobs per queue, status and minute, kept by statement triggers on jobs (drizzle/0018): GET
// /api/queues, /metrics and the history's depth sum these rows instead of counting jobs. Each
// session adds its deltas to its own stripe (1-16), so concurrent writers seldom share a row; the
// maintenance pass folds the stripes into stripe 0. `minute` is the minute of a queued job's
// available_at, so the jobs scheduled for later are those of the minutes after the current one
// (and the rest of this one); -infinity for every other status, and for queued minutes already
// past once folded.
export const jobCounts = herald.table(
  'job_counts',
  {
    queue: text('queue').notNull(),
    status: jobStatus('status').notNull(),
    minute: tstz('minute').notNull(),
    stripe: smallint('stripe').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'job_counts_pkey', columns: [t.queue, t.status, t.minute, t.stripe] })],
);

// ---- workflows -------------------------------------------------------------------------------

// A flow: jobs created together with dependencies between them. Its status is derived from its
// jobs (jobs_flow), never stored, so no completion has to lock a shared row to keep it.
export const flows = herald.table(
  'flows',
  {
    id: bigint('id', { mode: 'bigint' }).primaryKey().generatedAlwaysAsIdentity(),
    name: text('name'),
    createdAt: tstz('created_at').notNull().defaultNow(),
  },
  (t) => [check('flows_name', sql`${t.name} ~ ${sql.raw(NAME_PATTERN)}`)],
);

// One row per dependency: `child` waits for `parent`; `pos` is the parent's place in the child's
// dependsOn. A parent is always created before its child (a flow inserts its jobs in dependency
// order), so parent < child: the graph cannot hold a cycle, and locking by id follows the edges.
// No foreign keys, as for events (row-level RI triggers); the delete trigger drops a child's edges.
export const jobEdges = herald.table(
  'job_edges',
  {
    child: bigint('child', { mode: 'bigint' }).notNull(),
    parent: bigint('parent', { mode: 'bigint' }).notNull(),
    pos: integer('pos').notNull(),
  },
  (t) => [
    primaryKey({ name: 'job_edges_pkey', columns: [t.child, t.parent] }),
    index('job_edges_parent').on(t.parent),
    check('job_edges_order', sql`${t.parent} < ${t.child}`),
  ],
);

// ---- queue control ---------------------------------------------------------------------------

/** Who asked for a manual action: data.by on the events it writes, updated_by of queue settings. */
export interface Actor {
  /** The token's role; null when auth is off (no HERALD_TOKENS). */
  role: string | null;
  /** The token's label (HERALD_TOKENS entry role:label:token), when it has one. */
  label?: string;
}

// One row per queue that has settings; a queue without a row runs free. A claim of a queue
// with a limit locks its row FOR UPDATE, so such claims take turns (see queue/sql/claim-limited.ts).
export const queues = herald.table(
  'queues',
  {
    queue: text('queue').primaryKey(),
    paused: boolean('paused').notNull().default(false),
    concurrency: integer('concurrency'),
    groupConcurrency: integer('group_concurrency'),
    rateCount: integer('rate_count'),
    ratePeriodMs: integer('rate_period_ms'),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
    // Who made the last change ({role, label?} as the token says); null for rows from before it
    // was recorded, or changed through the core API without an actor.
    updatedBy: jsonb('updated_by').$type<Actor>(),
    // The queue that gets a copy of each job of this one that fails for good; null: none.
    deadLetter: text('dead_letter'),
  },
  (t) => [
    check('queues_queue_name', sql`${t.queue} ~ ${sql.raw(NAME_PATTERN)}`),
    check('queues_concurrency_range', sql`${t.concurrency} BETWEEN ${sql.raw(String(QUEUE_LIMITS.concurrency.min))} AND ${sql.raw(String(QUEUE_LIMITS.concurrency.max))}`),
    check('queues_group_concurrency_range', sql`${t.groupConcurrency} BETWEEN ${sql.raw(String(QUEUE_LIMITS.concurrency.min))} AND ${sql.raw(String(QUEUE_LIMITS.concurrency.max))}`),
    check('queues_rate_count_range', sql`${t.rateCount} BETWEEN ${sql.raw(String(QUEUE_LIMITS.rateCount.min))} AND ${sql.raw(String(QUEUE_LIMITS.rateCount.max))}`),
    check('queues_rate_period_range', sql`${t.ratePeriodMs} BETWEEN ${sql.raw(String(QUEUE_LIMITS.ratePeriodMs.min))} AND ${sql.raw(String(QUEUE_LIMITS.ratePeriodMs.max))}`),
    check('queues_dead_letter_name', sql`${t.deadLetter} ~ ${sql.raw(NAME_PATTERN)} AND ${t.deadLetter} <> ${t.queue}`),
    check('queues_rate_both', sql`(${t.rateCount} IS NULL) = (${t.ratePeriodMs} IS NULL)`),
  ],
);

// The queues the plain claim must leave alone (paused, or with a limit), kept in ONE row by a
// trigger on herald.queues. The plain claim reads it FOR SHARE: a locked read returns the
// newest committed version, and a settings change must wait for claims in flight, so no claim
// can act on settings older than the last PATCH that returned.
export const queueGate = herald.table(
  'queue_gate',
  {
    id: smallint('id').primaryKey().default(1),
    held: text('held').array().notNull().default(sql`'{}'::text[]`),
  },
  (t) => [check('queue_gate_one_row', sql`${t.id} = 1`)],
);

// Starts of rate-limited queues: the sliding window a claim counts. Written only by claims of
// rate-limited queues; pruned by the workers' maintenance.
export const queueStarts = herald.table(
  'queue_starts',
  {
    queue: text('queue').notNull(),
    at: tstz('at').notNull(),
  },
  (t) => [index('queue_starts_queue_at').on(t.queue, t.at)],
);

// Every live worker process, idle ones too: it registers at start, refreshes last_seen_at,
// and deletes its row on shutdown. A crashed one is recognised by its vanished liveness lock
// (lock_key) or a stale last_seen_at, and its row is removed by the maintenance pass.
export const workers = herald.table('workers', {
  id: text('id').primaryKey(),
  host: text('host').notNull(),
  pid: integer('pid').notNull(),
  // Null: every queue.
  queues: text('queues').array(),
  kinds: text('kinds').array().notNull(),
  capabilities: text('capabilities').array().notNull(),
  concurrency: integer('concurrency').notNull(),
  lockKey: integer('lock_key'),
  startedAt: tstz('started_at').notNull().defaultNow(),
  lastSeenAt: tstz('last_seen_at').notNull().defaultNow(),
});

// Recurring jobs. next_run_at is the next tick to make a job for; the scheduler advances it in
// the same transaction that enqueues the tick's job (idempotency key schedule:NAME:TICK_ISO).
export const schedules = herald.table(
  'schedules',
  {
    name: text('name').primaryKey(),
    cron: text('cron').notNull(),
    timezone: text('timezone').notNull().default('UTC'),
    job: jsonb('job').notNull(),
    paused: boolean('paused').notNull().default(false),
    nextRunAt: tstz('next_run_at'),
    lastRunAt: tstz('last_run_at'),
    lastJobId: bigint('last_job_id', { mode: 'bigint' }),
    createdAt: tstz('created_at').notNull().defaultNow(),
    updatedAt: tstz('updated_at').notNull().defaultNow(),
  },
  (t) => [
    check('schedules_name', sql`${t.name} ~ ${sql.raw(NAME_PATTERN)}`),
    index('schedules_due').on(t.nextRunAt).where(sql`NOT ${t.paused}`),
  ],
);

// Queue history: one row per queue and minute, rolled up from job_events by one process at a
// time (queue/sql/history.ts). `wait_hist` is a log-scale histogram of enqueue→start waits, so
// coarser buckets (15 min, 1 h) merge minutes into exact-to-the-bin percentiles.
export const queueStats = herald.table(
  'queue_stats',
  {
    queue: text('queue').notNull(),
    at: tstz('at').notNull(),
    enqueued: integer('enqueued').notNull().default(0),
    started: integer('started').notNull().default(0),
    succeeded: integer('succeeded').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    waitHist: integer('wait_hist').array().notNull().default(sql`'{}'::int[]`),
    // Queued jobs when the minute was last rolled up; null when no rollup ran in that minute.
    depth: integer('depth'),
  },
  (t) => [primaryKey({ columns: [t.queue, t.at] }), index('queue_stats_at').on(t.at)],
);

// Where the rollup stopped in the gap-free feed: one row, moved in the same transaction as the
// rows it added, so every event is counted exactly once.
export const statsCursor = herald.table('stats_cursor', {
  id: smallint('id').primaryKey().default(1),
  tx: xid8('tx').notNull().default(sql`'0'::xid8`),
  eventId: bigint('event_id', { mode: 'bigint' }).notNull().default(sql`0`),
});

// Where retention stopped removing events: the highest (tx, id) it deleted. A stream resumed from
// a cursor below it may have missed removed events, so it starts with `event: reset`.
export const retentionHorizon = herald.table(
  'retention_horizon',
  {
    id: smallint('id').primaryKey().default(1),
    tx: xid8('tx').notNull().default(sql`'0'::xid8`),
    eventId: bigint('event_id', { mode: 'bigint' }).notNull().default(sql`0`),
  },
  (t) => [check('retention_horizon_one_row', sql`${t.id} = 1`)],
);

// Jobs a bulk delete removed, until retention removes their events too (their history stays
// until then, so queue history and resuming streams still see every event).
export const deletedJobs = herald.table(
  'deleted_jobs',
  {
    jobId: bigint('job_id', { mode: 'bigint' }).primaryKey(),
    deletedAt: tstz('deleted_at').notNull().defaultNow(),
  },
  (t) => [index('deleted_jobs_at').on(t.deletedAt)],
);

import type { JobStatus } from '../schema/index.ts';
import { SIGNAL_LOCK_NAMESPACE } from '../locks.ts';
import { statement } from './statement.ts';
import type { DurableWait } from '../search.ts';

// Durable handlers (worker/durable.ts): their records, their sleeps and waits, and signals.
// Every write of a run is fenced like an outcome (id, attempt, locked_by), and takes the job's row
// lock, FOR SHARE or FOR UPDATE: a takeover (reaper, cancel, a newer claim) that commits first
// makes the fence fail; one that comes later waits for the write to commit.
const HELD = `j.id = $1 AND j.attempt = $2 AND j.locked_by = $3`;

/** The lock that orders a signal to job $1 and a run of it about to wait (queue/locks.ts). */
const SIGNAL_LOCK = `pg_advisory_xact_lock(${SIGNAL_LOCK_NAMESPACE}, ($1::bigint % 2147483647)::int)`;

/** A stored record: a step's result, a sleep's or wait's deadline, an invoked job's id; or a signal. */
export interface RecordRow {
  type: 'step' | 'sleep' | 'wait' | 'invoke' | 'signal';
  name: string;
  occurrence: number;
  result: unknown;
}

/**
 * The run's first durable call: every record and signal of the job in one read. A run that
 * resumes after a sleep or wait clears jobs.wait here (the update trigger writes `resumed`).
 */
export const loadRecords = statement<[id: string, attempt: number, worker: string], RecordRow>(
  'durable_load',
  `
WITH resumed AS (
  UPDATE herald.jobs j SET wait = NULL WHERE ${HELD} AND j.wait IS NOT NULL RETURNING j.id
)
SELECT type, name, occurrence, result FROM herald.job_steps WHERE job_id = $1
UNION ALL
SELECT 'signal', name, 0, jsonb_build_object('payload', payload, 'timedOut', timed_out) FROM herald.job_signals WHERE job_id = $1`,
);

/**
 * Stores finished steps of one worker's runs, each with its `step` event, in one statement: the
 * steps that concurrent runs finish while a write is in flight share the next one (and its
 * commit). Each step is fenced on its own: `held` false, its lease is lost and nothing of it was
 * written; a step stored before is kept as it was. The jobs are locked in id order, as every
 * statement that locks several does, so two of them cannot deadlock.
 */
export const saveSteps = statement<
  [ids: string[], attempts: number[], worker: string, names: string[], occurrences: number[], results: string[], ms: number[]],
  { held: boolean }
>(
  'durable_save_steps',
  `
WITH i AS (
  SELECT * FROM unnest($1::bigint[], $2::int[], $4::text[], $5::int[], $6::text[], $7::float8[])
    WITH ORDINALITY AS i(id, attempt, name, occurrence, result, ms, n)
),
h AS (
  SELECT i.*, j.queue, j.kind, j.flow_id
  FROM i JOIN herald.jobs j ON j.id = i.id AND j.attempt = i.attempt AND j.locked_by = $3
  ORDER BY j.id
  FOR SHARE OF j
),
s AS (
  INSERT INTO herald.job_steps (job_id, type, name, occurrence, attempt, result, started_at)
  SELECT h.id, 'step', h.name, h.occurrence, h.attempt, h.result::jsonb, now() - make_interval(secs => h.ms / 1000) FROM h
  ON CONFLICT DO NOTHING
  RETURNING job_id, name, occurrence
),
e AS (
  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data, flow_id)
  SELECT h.id, h.queue, h.kind, 'step', 'running', h.attempt, $3,
         jsonb_build_object('name', h.name, 'occurrence', h.occurrence, 'ms', round(h.ms)), h.flow_id
  FROM h JOIN s ON s.job_id = h.id AND s.name = h.name AND s.occurrence = h.occurrence
  ORDER BY h.n
)
SELECT EXISTS (SELECT 1 FROM h WHERE h.n = i.n) AS held FROM i ORDER BY i.n`,
);

/**
 * The job's row, locked for a run that is about to sleep or wait; no row: the lease is lost. $4: it
 * waits for a signal, so it takes the signal lock too (a signal sent meanwhile is then seen).
 */
export const lockHeld = statement<[id: string, attempt: number, worker: string, forSignal: boolean], { id: string }>(
  'durable_lock',
  `SELECT j.id, CASE WHEN $4::bool THEN ${SIGNAL_LOCK}::text END AS signal_lock FROM herald.jobs j WHERE ${HELD} FOR UPDATE`,
);

/** One signal of a job (read after lockHeld, so a signal sent meanwhile is seen). */
export const readSignal = statement<[id: string, name: string], { payload: unknown; timed_out: boolean }>(
  'durable_signal',
  `SELECT payload, timed_out FROM herald.job_signals WHERE job_id = $1 AND name = $2`,
);

/** An invoked job's outcome so far. */
export const readChild = statement<[id: string], { status: JobStatus; result: unknown; last_error: { message: string } | null }>(
  'durable_child',
  `SELECT status, result, last_error FROM herald.jobs WHERE id = $1`,
);

/** A record that is not a step (a sleep's or wait's deadline, an invoked job's id), written with the wait. */
export const saveRecord = statement<[id: string, attempt: number, type: string, name: string, occurrence: number, result: string]>(
  'durable_record',
  `
INSERT INTO herald.job_steps (job_id, type, name, occurrence, attempt, result, started_at)
VALUES ($1, $3, $4, $5, $2, $6::jsonb, now())
ON CONFLICT DO NOTHING`,
);

/**
 * ctx.invoke's job: an enqueue body (JSON $1, shaped as sql/enqueue.ts's records) made the child
 * of job $2, in its flow.
 */
export const insertInvoked = statement<[record: string, parent: string], { id: string }>(
  'durable_invoke',
  `
INSERT INTO herald.jobs (queue, kind, payload, priority, max_attempts, requires, "group", tags, timeout_ms, expire_at, flow_id, invoked_by)
SELECT r.queue, r.kind, r.payload, r.priority, r.max_attempts, r.requires, r."group", r.tags, r.timeout_ms, r.expire_at, p.flow_id, p.id
FROM jsonb_to_record($1::jsonb) AS r(queue text, kind text, payload jsonb, priority smallint, max_attempts int, requires text[],
                                     "group" text, tags text[], timeout_ms int, expire_at timestamptz)
JOIN herald.jobs p ON p.id = $2
RETURNING id`,
);

/**
 * The run ends to sleep or wait: the job is queued again at $4 with jobs.wait $5, and the attempt
 * is given back (a sleep or a wait is not a failure). A cancel requested meanwhile wins.
 */
export const suspendJob = statement<[id: string, attempt: number, worker: string, until: string, wait: string], { status: JobStatus }>(
  'durable_suspend',
  `
UPDATE herald.jobs j
SET status = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE 'queued' END::herald.job_status,
    attempt = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.attempt ELSE j.attempt - 1 END,
    finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN now() END,
    available_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.available_at ELSE $4::timestamptz END,
    wait = $5::jsonb,
    locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL
WHERE ${HELD}
RETURNING j.status`,
);

/**
 * A wait whose deadline passed takes the signal's place: stored as timed out unless a signal came
 * first (the key decides). `held` 0: the lease is lost; `stored` 0: a signal is there (readSignal).
 */
export const timeOutSignal = statement<[id: string, attempt: number, worker: string, name: string], { held: number; stored: number }>(
  'durable_timeout',
  `
WITH h AS (SELECT j.id FROM herald.jobs j WHERE ${HELD} FOR SHARE),
s AS (
  INSERT INTO herald.job_signals (job_id, name, timed_out) SELECT h.id, $4, true FROM h
  ON CONFLICT DO NOTHING
  RETURNING job_id
)
SELECT (SELECT count(*) FROM h)::int AS held, (SELECT count(*) FROM s)::int AS stored`,
);

/**
 * The job a signal is sent to, after its signal lock: a run about to wait for the signal either
 * waited first (and is found waiting) or sees the signal. Not the row lock: a claim would skip it.
 */
export const lockForSignal = statement<[id: string], { status: JobStatus }>(
  'signal_lock',
  `SELECT status FROM (SELECT ${SIGNAL_LOCK}) l, herald.jobs WHERE id = $1`,
);

/**
 * Stores a signal with its `signalled` event; when the job waits for it, makes it claimable now
 * and wakes the workers at commit. `stored` 0: the job already holds one of that name
 * (`timed_out`: its wait timed out).
 */
export const sendSignal = statement<[id: string, name: string, payload: string | null], { stored: number; timed_out: boolean | null; woken: number }>(
  'signal_send',
  `
WITH s AS (
  INSERT INTO herald.job_signals (job_id, name, payload) VALUES ($1, $2, $3::jsonb)
  ON CONFLICT DO NOTHING
  RETURNING job_id
),
e AS (
  INSERT INTO herald.job_events (job_id, queue, kind, type, status, attempt, worker, data, flow_id)
  SELECT j.id, j.queue, j.kind, 'signalled', j.status, j.attempt, NULL, jsonb_build_object('name', $2::text), j.flow_id
  FROM herald.jobs j JOIN s ON s.job_id = j.id
),
w AS (
  UPDATE herald.jobs j SET available_at = now()
  FROM s
  WHERE j.id = s.job_id AND j.status = 'queued' AND j.wait->>'type' = 'signal' AND j.wait->>'name' = $2
    AND j.available_at > now()
  RETURNING j.queue
)
SELECT (SELECT count(*) FROM s)::int AS stored,
       (SELECT timed_out FROM herald.job_signals WHERE job_id = $1 AND name = $2 AND NOT EXISTS (SELECT 1 FROM s)) AS timed_out,
       herald.wake_at_commit(ARRAY(SELECT 'herald_jobs ' || w.queue FROM w)) AS woken`,
);

/** A job's steps (GET /api/jobs/:id/steps), in the order they finished. */
export const listSteps = statement<
  [id: string],
  { name: string; occurrence: number; attempt: number; started_at: Date; finished_at: Date; result: unknown }
>(
  'durable_steps',
  `
SELECT name, occurrence, attempt, started_at, finished_at, result
FROM herald.job_steps
WHERE job_id = $1 AND type = 'step'
ORDER BY finished_at, name, occurrence`,
);

/**
 * Jobs whose durable handler sleeps or waits, by queue and wait (the herald_jobs_waiting metric):
 * queued with jobs.wait set and runAt still ahead, as the Job JSON's waitingFor says. Reads the
 * jobs_waiting index, which holds only such jobs.
 */
export const waitingCounts = statement<[], { queue: string; waiting_for: DurableWait; n: number }>(
  'durable_waiting_counts',
  `
SELECT queue, wait->>'type' AS waiting_for, count(*)::int AS n
FROM herald.jobs
WHERE status = 'queued' AND wait IS NOT NULL AND available_at > now()
GROUP BY 1, 2
ORDER BY 1, 2`,
);

import type { JobStatus } from '../schema/index.ts';
import { RENEW_TIMEOUT_MS } from '../defaults.ts';
import { leaseFromNow, statement } from './statement.ts';

// Every worker write is fenced: id AND attempt AND locked_by (so status = 'running'). A row that
// does not come back was lost (reaped, cancelled, or taken by a newer attempt): do not write.
//
// The batch comes in as parallel arrays, unnested into `l`, and every fence test compares a jobs
// column with a column of `l`, so the plan stays linear in the batch whatever the statistics say.
// A constant test on jobs (`locked_by = $3`, `status = 'running'`) is a filter the planner
// estimates from statistics, and statistics taken while little was running put it at one row: it
// then drove a nested loop from jobs and rescanned the unnested arrays for every row, O(batch²)
// (a 500-job completion took 300 ms instead of 30). `locked_by` alone implies status = 'running':
// the CHECKs jobs_queued_shape and jobs_terminal_shape make it NULL in every other status.
const FENCE = `j.id = l.id AND j.attempt = l.attempt AND j.locked_by = l.worker`;

// Batches reach their rows by primary key: without `id = ANY($1)` the planner prices 500 index
// lookups above a sequential scan of a small table and hashes every row of it instead.
const BATCH_FENCE = `j.id = ANY($1::bigint[]) AND ${FENCE}`;

/** The batch as `l`: $1 ids, $2 attempts, then `extra` [array, name] columns, and the worker ($3) on every row. */
function held(...extra: [array: string, name: string][]): string {
  const cols: [string, string][] = [
    ['$1::bigint[]', 'id'],
    ['$2::int[]', 'attempt'],
    ...extra,
    ['array_fill($3::text, ARRAY[cardinality($1::bigint[])])', 'worker'],
  ];
  return `unnest(${cols.map((c) => c[0]).join(', ')}) AS l(${cols.map((c) => c[1]).join(', ')})`;
}

/**
 * Renews the leases of many jobs at once; returns the ones still held. Each renewal also records
 * the liveness key the worker holds now ($5, NULL while its listener is down): after a reconnect
 * that had to take a new key (the old session still held the old one), the jobs follow the live
 * key, and the reaper does not take them when the old session ends (see reap.ts).
 */
export const renewLeases = statement<
  [ids: string[], attempts: number[], worker: string, leaseMs: number, ownerLock: number | null],
  { id: string; cancel_requested: boolean }
>(
  'heartbeat',
  `
UPDATE herald.jobs j
SET lease_expires_at = ${leaseFromNow('$4')}, owner_lock = $5::int
FROM ${held()}
WHERE ${BATCH_FENCE}
RETURNING j.id, j.cancel_requested_at IS NOT NULL AS cancel_requested`,
  { timeoutMs: RENEW_TIMEOUT_MS },
);

/** Progress also renews the lease. */
export const reportProgress = statement<
  [id: string, attempt: number, worker: string, percent: number, message: string | null, leaseMs: number],
  { id: string; cancel_requested: boolean }
>(
  'progress',
  `
UPDATE herald.jobs j
SET progress = jsonb_build_object('percent', $4::float8, 'message', $5::text),
    lease_expires_at = ${leaseFromNow('$6')}
FROM (SELECT $1::bigint AS id, $2::int AS attempt, $3::text AS worker) l
WHERE ${FENCE}
RETURNING j.id, j.cancel_requested_at IS NOT NULL AS cancel_requested`,
);

/** Success for a batch of jobs: one UPDATE ... FROM unnest. */
export const completeJobs = statement<
  [ids: string[], attempts: number[], worker: string, results: string[]],
  { id: string }
>(
  'complete',
  `
UPDATE herald.jobs j
SET status = 'succeeded', result = l.result, finished_at = now(),
    locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL
FROM ${held(['$4::jsonb[]', 'result'])}
WHERE ${BATCH_FENCE}
RETURNING j.id`,
);

// Backoff before attempt n+1, in ms: min(max, base * 2^(n-1)) * (1 - 0.2 * random()).
// It doubles per attempt, never passes the cap, and the jitter (up to -20%) spreads retries.
const BACKOFF_SQL = `least($5::float8, $4::float8 * power(2, j.attempt - 1)) * (1 - 0.2 * random())`;

/** Failure for a batch: retry later with backoff, fail when out of attempts, or honour a cancel. */
export const failJobs = statement<
  [
    ids: string[],
    attempts: number[],
    worker: string,
    backoffBaseMs: number,
    backoffMaxMs: number,
    errors: string[],
    final: boolean[],
  ],
  { id: string; status: JobStatus; available_at: Date }
>(
  'fail',
  `
UPDATE herald.jobs j
SET status = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                  WHEN j.attempt >= j.max_attempts OR l.final THEN 'failed'
                  ELSE 'queued' END::herald.job_status,
    available_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempt >= j.max_attempts OR l.final
                        THEN j.available_at
                        ELSE now() + make_interval(secs => ${BACKOFF_SQL} / 1000) END,
    finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempt >= j.max_attempts OR l.final
                       THEN now() END,
    last_error = l.error,
    locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL
FROM ${held(['$6::jsonb[]', 'error'], ['$7::bool[]', 'final'])}
WHERE ${BATCH_FENCE}
RETURNING j.id, j.status, j.available_at`,
);

/** Shutdown hands jobs back without burning the attempt (event 'released'). */
export const releaseJobs = statement<[ids: string[], attempts: number[], worker: string], { id: string }>(
  'release',
  `
UPDATE herald.jobs j
SET status = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE 'queued' END::herald.job_status,
    attempt = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.attempt ELSE j.attempt - 1 END,
    finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN now() END,
    available_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.available_at ELSE now() END,
    locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL
FROM ${held()}
WHERE ${BATCH_FENCE}
RETURNING j.id`,
);

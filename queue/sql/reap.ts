import { LOCK_NAMESPACE, REAPER_KEY } from '../locks.ts';
import type { JobStatus } from '../schema/index.ts';
import { LIVE_KEYS } from './live.ts';
import { statement, timeoutDeadline } from './statement.ts';

// Running jobs whose owner is gone come back when their lease has run out. A vanished liveness
// lock (a session advisory lock on the worker's listener connection) is not proof of death by
// itself: a connection cut for a moment drops it too, and the worker retakes it on reconnect.
// So a missing lock only shortens the lease to a grace ($2 ms, DEFAULTS.lockLossGraceMs: markOrphans); a worker that
// comes back renews it at once, a dead one never does, and the reap below then takes its jobs.
// Only one reaper runs at a time (the try-lock gate), so many workers never stampede. The UPDATE
// re-checks status and expiry itself, on the locked row: a job that completed or was renewed
// after the scan started is left alone (River #1302).
const DEAD = `j.status = 'running' AND j.lease_expires_at < now()`;


// Tested per row when the row is updated, not from a snapshot: pg_locks is read live, so a lock
// retaken while this statement waited for the row (the worker's renewal) is seen.
const OWNER_GONE = `j.owner_lock IS NOT NULL AND NOT EXISTS (${LIVE_KEYS} AND objid::bigint::int = j.owner_lock)`;

export const markOrphans = statement<[limit: number, graceMs: number], { id: string }>(
  'mark_orphans',
  `
WITH gate AS MATERIALIZED (
  SELECT pg_try_advisory_xact_lock(${LOCK_NAMESPACE}, ${REAPER_KEY}) AS ok
),
live AS MATERIALIZED (${LIVE_KEYS}
),
suspect AS (
  SELECT j.id FROM herald.jobs j
  WHERE (SELECT ok FROM gate)
    -- A restart drops every lock at once, and workers reconnect at their own pace: jobs claimed
    -- before it are left to their leases, so a worker back within its lease keeps its jobs.
    AND j.started_at > pg_postmaster_start_time()
    AND j.status = 'running' AND j.owner_lock IS NOT NULL AND j.owner_lock NOT IN (SELECT key FROM live)
    AND j.lease_expires_at > now() + make_interval(secs => $2::float8 / 1000)
  LIMIT $1
  FOR UPDATE SKIP LOCKED
)
UPDATE herald.jobs j
SET lease_expires_at = now() + make_interval(secs => $2::float8 / 1000)
FROM suspect
WHERE j.id = suspect.id AND j.status = 'running' AND ${OWNER_GONE}
  AND j.lease_expires_at > now() + make_interval(secs => $2::float8 / 1000)
RETURNING j.id`,
);

// The lease ran out because the timeout capped it (see leaseFromNow).
const TIMED_OUT = `j.lease_expires_at < now() AND ${timeoutDeadline('j.started_at')} <= now()`;

export const reapJobs = statement<[limit: number], { id: string; status: JobStatus }>(
  'reap',
  `
WITH gate AS MATERIALIZED (
  SELECT pg_try_advisory_xact_lock(${LOCK_NAMESPACE}, ${REAPER_KEY}) AS ok
),
dead AS (
  SELECT j.id FROM herald.jobs j
  WHERE (SELECT ok FROM gate) AND ${DEAD}
  ORDER BY j.lease_expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
)
UPDATE herald.jobs j
SET status = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                  WHEN j.attempt >= j.max_attempts THEN 'failed'
                  ELSE 'queued' END::herald.job_status,
    finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempt >= j.max_attempts THEN now() END,
    available_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempt >= j.max_attempts
                        THEN j.available_at ELSE now() END,
    last_error = jsonb_build_object(
      'message', CASE WHEN ${TIMED_OUT}
                      THEN 'timed out after ' || j.timeout_ms || ' ms (timeoutMs); worker ' || j.locked_by || ' did not end the attempt'
                      WHEN ${OWNER_GONE}
                      THEN 'worker ' || j.locked_by || ' died (its connection closed)'
                      ELSE 'lease expired: worker ' || j.locked_by || ' stopped renewing it' END,
      'reason', CASE WHEN ${TIMED_OUT} THEN 'timeout'
                     WHEN ${OWNER_GONE} THEN 'owner_gone' ELSE 'lease_expired' END,
      'worker', j.locked_by,
      'attempt', j.attempt),
    locked_by = NULL, lease_expires_at = NULL, owner_lock = NULL
FROM dead
WHERE j.id = dead.id AND ${DEAD}
RETURNING j.id, j.status`,
);

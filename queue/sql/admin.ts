import { MAX_ATTEMPTS_LIMIT } from '../defaults.ts';
import type { JobRow } from './rows.ts';
import { statement } from './statement.ts';
import { withWaitingFor } from './waiting.ts';

// The single-job routes and the bulk actions (search.ts) share these clauses, so "cancel" and
// "retry" mean the same thing whichever way they are asked for.

// A queued job is cancelled at once; a running one is asked to stop (its worker hears it on
// herald_control, fires the handler's signal, and then writes 'cancelled').
// A blocked job (waiting for its parents) is cancelled at once too.
export const CANCEL = {
  set: `status = CASE WHEN status IN ('queued', 'blocked') THEN 'cancelled' ELSE status END::herald.job_status,
    finished_at = CASE WHEN status IN ('queued', 'blocked') THEN now() ELSE finished_at END,
    cancel_requested_at = coalesce(cancel_requested_at, now())`,
  where: `status IN ('queued', 'running', 'blocked')`,
};

// A failed or cancelled job runs again, with at least one attempt left (MAX_ATTEMPTS_LIMIT is the ceiling).
// A retry is an explicit "run it now": an expireAt already past is cleared (else the job would
// only expire again at once); one still ahead is kept. One that has parents waits for them again
// (blocked): the update trigger settles it at once.
export const RETRY = {
  set: `status = CASE WHEN on_parent_failure IS NULL THEN 'queued' ELSE 'blocked' END::herald.job_status, available_at = now(), finished_at = NULL, cancel_requested_at = NULL,
    result = NULL, progress = NULL, wait = NULL, max_attempts = greatest(max_attempts, attempt + 1),
    expire_at = CASE WHEN expire_at <= now() THEN NULL ELSE expire_at END`,
  where: `status IN ('failed', 'cancelled') AND attempt < ${MAX_ATTEMPTS_LIMIT}`,
};

// Run now: a queued job waiting out its backoff or its runAt becomes due at once (its trigger
// writes 'promoted'). A durable handler's sleep or wait (jobs.wait) is left to its own end: a
// signal, the child it invoked or its own time.
export const RUN_NOW = {
  set: `available_at = now()`,
  where: `status = 'queued' AND available_at > now() AND wait IS NULL`,
};

/** Only finished jobs may be deleted: a queued or running one would vanish under its worker. */
export const DELETE = { statuses: `('succeeded', 'failed', 'cancelled')` };

export const cancelJob = statement<[id: string], JobRow>('cancel', `UPDATE herald.jobs SET ${CANCEL.set} WHERE id = $1 AND ${CANCEL.where} RETURNING *`);

export const retryJob = statement<[id: string], JobRow>(
  'retry',
  withWaitingFor(`rows AS (UPDATE herald.jobs SET ${RETRY.set} WHERE id = $1 AND ${RETRY.where} RETURNING *)`),
);

export const runNowJob = statement<[id: string], JobRow>(
  'run_now',
  withWaitingFor(`rows AS (UPDATE herald.jobs SET ${RUN_NOW.set} WHERE id = $1 AND ${RUN_NOW.where} RETURNING *)`),
);

/**
 * Signs the events this transaction wrote with who asked for it (data.by, JSON $1). Run last in a
 * manual action's transaction: its events are not visible to anyone yet, so this is still their
 * first version as readers see it. Found by the key (tx, id); nothing on the workers' path pays.
 */
export const stampActor = statement<[actor: string]>(
  'stamp_actor',
  `UPDATE herald.job_events SET data = coalesce(data, '{}'::jsonb) || jsonb_build_object('by', $1::jsonb)
WHERE tx = pg_current_xact_id_if_assigned()`,
);

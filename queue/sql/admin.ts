import { MAX_ATTEMPTS_LIMIT } from '../defaults.ts';
import type { JobRow } from './rows.ts';
import { statement } from './statement.ts';

// A queued job is cancelled at once; a running one is asked to stop (its worker hears it on
// herald_control, fires the handler's signal, and then writes 'cancelled').
export const cancelJob = statement<[id: string], JobRow>(
  'cancel',
  `
UPDATE herald.jobs
SET status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END::herald.job_status,
    finished_at = CASE WHEN status = 'queued' THEN now() ELSE finished_at END,
    cancel_requested_at = coalesce(cancel_requested_at, now())
WHERE id = $1 AND status IN ('queued', 'running')
RETURNING *`,
);

// A failed or cancelled job runs again, with at least one attempt left (MAX_ATTEMPTS_LIMIT is the ceiling).
export const retryJob = statement<[id: string], JobRow>(
  'retry',
  `
UPDATE herald.jobs
SET status = 'queued', available_at = now(), finished_at = NULL, cancel_requested_at = NULL,
    result = NULL, progress = NULL, max_attempts = greatest(max_attempts, attempt + 1)
WHERE id = $1 AND status IN ('failed', 'cancelled') AND attempt < ${MAX_ATTEMPTS_LIMIT}
RETURNING *`,
);

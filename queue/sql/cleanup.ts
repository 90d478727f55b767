import { statement } from './statement.ts';

// Retention: finished jobs older than $1 ms go, with their events, at most $2 per call so a
// big backlog is deleted in short transactions that never block the queue for long.
export const deleteFinishedJobs = statement<[olderThanMs: number, limit: number], { id: string }>(
  'cleanup',
  `
WITH doomed AS (
  SELECT id FROM herald.jobs
  WHERE status IN ('succeeded', 'failed', 'cancelled')
    AND finished_at < now() - make_interval(secs => $1::float8 / 1000)
  ORDER BY finished_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
),
events AS (
  DELETE FROM herald.job_events e USING doomed d WHERE e.job_id = d.id
)
DELETE FROM herald.jobs j USING doomed d WHERE j.id = d.id
RETURNING j.id`,
);

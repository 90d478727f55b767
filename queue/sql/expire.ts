import { statement } from './statement.ts';

// Queued jobs whose expireAt has passed end cancelled; the trigger writes the 'expired' event
// (it reads last_error.reason). The claims refuse such jobs already, so this only settles them.
export const expireJobs = statement<[limit: number], { id: string }>(
  'expire',
  `
UPDATE herald.jobs j
SET status = 'cancelled', finished_at = now(),
    last_error = jsonb_build_object(
      'message', 'expired: not started by its expireAt (' || herald.iso_utc(j.expire_at) || ')',
      'reason', 'expired')
FROM (
  SELECT id FROM herald.jobs
  WHERE status = 'queued' AND expire_at <= now()
  ORDER BY expire_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
) e
WHERE j.id = e.id AND j.status = 'queued'
RETURNING j.id`,
);

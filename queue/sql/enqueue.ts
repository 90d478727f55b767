import { statement } from './statement.ts';

// Many jobs in one statement, from one JSON array. Rows are inserted in input order, so the
// ids they get follow it; a reused idempotency key inserts nothing (the caller looks it up).
export const enqueueJobs = statement(
  'enqueue',
  `
WITH input AS (
  SELECT * FROM ROWS FROM (
    jsonb_to_recordset($1::jsonb) AS (
      kind text, queue text, payload jsonb, priority int, run_at timestamptz,
      max_attempts int, requires text[], idempotency_key text)
  ) WITH ORDINALITY AS x(kind, queue, payload, priority, run_at, max_attempts, requires, idempotency_key, ord)
)
INSERT INTO herald.jobs (kind, queue, payload, priority, available_at, max_attempts, requires, idempotency_key)
SELECT kind, coalesce(queue, 'default'), coalesce(payload, '{}'::jsonb), coalesce(priority, 0),
       coalesce(run_at, now()), coalesce(max_attempts, 5), coalesce(requires, '{}'::text[]), idempotency_key
FROM input
ORDER BY ord
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING *`,
);

export const jobsByIdempotencyKey = statement(
  'jobs_by_key',
  `SELECT * FROM herald.jobs WHERE idempotency_key = ANY($1::text[])`,
);

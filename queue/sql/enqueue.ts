import type { JobRow } from './rows.ts';
import { statement } from './statement.ts';
import { withWaitingFor } from './waiting.ts';

/** One job of the JSON array enqueueJobs takes: every field filled in (services/insert.ts applies the defaults). */
export interface EnqueueRecord {
  kind: string;
  queue: string;
  payload: unknown;
  priority: number;
  /** ISO time, or null for now. */
  run_at: string | null;
  max_attempts: number;
  requires: string[];
  idempotency_key: string | null;
  group: string | null;
  tags: string[];
  timeout_ms: number | null;
  /** ISO time, or null. */
  expire_at: string | null;
  /** The traceparent of the job's send span; null when none records. */
  trace: string | null;
  // Workflows only (queue/flows.ts); absent for a plain job: queued, in no flow, no parents.
  status?: 'queued' | 'blocked';
  flow_id?: string;
  ref?: string;
  on_parent_failure?: 'cancel' | 'run';
  has_children?: boolean;
}

// Many jobs in one statement, from one JSON array (JSON.stringify of EnqueueRecord[]). Rows are
// inserted in input order, so the ids they get follow it; a reused idempotency key inserts
// nothing (the caller looks it up).
export const enqueueJobs = statement<[records: string], JobRow>(
  'enqueue',
  withWaitingFor(`
input AS (
  SELECT * FROM ROWS FROM (
    jsonb_to_recordset($1::jsonb) AS (
      kind text, queue text, payload jsonb, priority int, run_at timestamptz,
      max_attempts int, requires text[], idempotency_key text,
      "group" text, tags text[], timeout_ms int, expire_at timestamptz, trace text,
      status herald.job_status, flow_id bigint, ref text, on_parent_failure text, has_children boolean)
  ) WITH ORDINALITY AS x(kind, queue, payload, priority, run_at, max_attempts, requires, idempotency_key,
                         "group", tags, timeout_ms, expire_at, trace, status, flow_id, ref, on_parent_failure, has_children, ord)
),
rows AS (
INSERT INTO herald.jobs (kind, queue, payload, priority, available_at, max_attempts, requires, idempotency_key,
                         "group", tags, timeout_ms, expire_at, trace, status, flow_id, ref, on_parent_failure, has_children)
SELECT kind, queue, coalesce(payload, '{}'::jsonb), priority, coalesce(run_at, now()), max_attempts, requires, idempotency_key,
       "group", tags, timeout_ms, expire_at, trace, coalesce(status, 'queued'), flow_id, ref, on_parent_failure, has_children
FROM input
ORDER BY ord
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING *
)`),
);

export const jobsByIdempotencyKey = statement<[keys: string[]], JobRow & { idempotency_key: string }>(
  'jobs_by_key',
  withWaitingFor(`rows AS (SELECT * FROM herald.jobs WHERE idempotency_key = ANY($1::text[]))`),
);

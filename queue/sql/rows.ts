// Rows as node-postgres returns them (snake_case columns; int8 as a string, timestamptz as a
// Date, jsonb parsed). Shared by the statements that return whole rows of the two tables.
import type { Job } from '../job.ts';
import type { EventType, JobStatus } from '../schema.ts';

/** A row of herald.jobs (`SELECT *` / `RETURNING *`). */
export interface JobRow {
  id: string;
  queue: string;
  kind: string;
  payload: unknown;
  priority: number;
  status: JobStatus;
  attempt: number;
  max_attempts: number;
  available_at: Date;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  locked_by: string | null;
  lease_expires_at: Date | null;
  owner_lock: number | null;
  requires: string[];
  idempotency_key: string | null;
  progress: Job['progress'];
  result: unknown;
  last_error: Job['lastError'];
  cancel_requested_at: Date | null;
  group: string | null;
  tags: string[];
  timeout_ms: number | null;
  expire_at: Date | null;
  flow_id: string | null;
  ref: string | null;
  on_parent_failure: 'cancel' | 'run' | null;
  has_children: boolean | null;
  /** Only from statements that return jobs to the API (sql/waiting.ts): the parents, in dependsOn order. */
  depends_on?: string[];
  /** Only from statements that compute why a queued job waits. */
  waiting_for?: Job['waitingFor'];
}

/** A row of herald.job_events as the feed reads it (tx as text: xid8 has no JS type). */
export interface EventRow {
  id: string;
  job_id: string;
  tx: string;
  at: Date;
  queue: string;
  kind: string;
  type: EventType;
  status: JobStatus;
  attempt: number;
  worker: string | null;
  data: unknown;
  flow_id: string | null;
}

/** The feed position a statement reads after: (tx, id). */
export type FeedAfter = [afterTx: string, afterId: string];

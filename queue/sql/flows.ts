// Workflows: flows, the edges between their jobs, and the reads of the flow pages. The unblocking
// itself is in the database (drizzle/0016_flow_triggers.sql): the transaction that finishes a
// parent settles its children, so nothing here polls.
import type { JobStatus } from '../schema/index.ts';
import { CANCEL, RETRY } from './admin.ts';
import type { JobRow } from './rows.ts';
import { statement } from './statement.ts';
import { withWaitingFor } from './waiting.ts';

export const insertFlow = statement<[name: string | null], { id: string; created_at: Date }>(
  'flow_insert',
  `INSERT INTO herald.flows (name) VALUES ($1) RETURNING id::text AS id, created_at`,
);

// Existing jobs about to gain children: locked in id order (as every settler locks), and marked
// has_children, so a parent finishing in another transaction either waits for the new edges and
// sees them, or has finished before and the caller's settle sees that. Returns the ids found.
export const lockParents = statement<[ids: string[]], { id: string }>(
  'flow_lock_parents',
  `
WITH locked AS (
  SELECT id, has_children FROM herald.jobs WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE
),
marked AS (
  UPDATE herald.jobs j SET has_children = true FROM locked l WHERE j.id = l.id AND l.has_children IS NOT TRUE
)
SELECT id::text AS id FROM locked`,
);

/**
 * Edges as parallel arrays: child waits for parent, at place pos of its dependsOn. Each new child
 * counts its parents that have not ended (waiting_on); the parents are new or locked, so none ends
 * meanwhile.
 */
export const insertEdges = statement<[children: string[], parents: string[], positions: number[]]>(
  'flow_insert_edges',
  `
WITH e AS (
  INSERT INTO herald.job_edges (child, parent, pos) SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[])
  RETURNING child, parent
)
UPDATE herald.jobs c SET waiting_on = w.n
FROM (SELECT e.child, count(*) FILTER (WHERE p.status NOT IN ('succeeded', 'failed', 'cancelled'))::int AS n
      FROM e JOIN herald.jobs p ON p.id = e.parent GROUP BY e.child) w
WHERE c.id = w.child`,
);

/** Settles new children of existing jobs: their parents may have finished already. */
export const settleChildren = statement<[ids: string[]]>('flow_settle', `SELECT herald.flow_settle($1::bigint[])`);

export const jobsById = statement<[ids: string[]], JobRow>(
  'flow_jobs_by_id',
  withWaitingFor(`rows AS (SELECT * FROM herald.jobs WHERE id = ANY($1::bigint[]))`),
);

/** A flow with its per-status counts and the latest finish; the status is derived from them. */
export interface FlowRow {
  id: string;
  name: string | null;
  created_at: Date;
  counts: Partial<Record<JobStatus, number>>;
  finished_at: Date | null;
}

// Per flow: counts by status off the jobs_flow index, the latest finish, and the derived status
// (running while any job is unfinished; then failed if any failed or was cancelled).
const FLOW_SUMMARY = `
SELECT f.id::text AS id, f.name, f.created_at, coalesce(s.counts, '{}'::jsonb) AS counts, s.finished_at, s.status
FROM herald.flows f
CROSS JOIN LATERAL (
  SELECT jsonb_object_agg(x.status, x.n) AS counts,
         max(x.finished_at) AS finished_at,
         CASE WHEN bool_or(x.status NOT IN ('succeeded', 'failed', 'cancelled')) THEN 'running'
              WHEN bool_or(x.status IN ('failed', 'cancelled')) THEN 'failed'
              ELSE 'succeeded' END AS status
  FROM (SELECT j.status, count(*)::int AS n, max(j.finished_at) AS finished_at
        FROM herald.jobs j WHERE j.flow_id = f.id GROUP BY j.status) x
) s`;

export const getFlow = statement<[id: string], FlowRow & { status: FlowStatus }>('flow_get', `${FLOW_SUMMARY} WHERE f.id = $1`);

export const FLOW_STATUSES = ['running', 'succeeded', 'failed'] as const;
export type FlowStatus = (typeof FLOW_STATUSES)[number];

/** Newest first, below the cursor $2, of status $1 (null: any). */
export const listFlows = statement<[status: FlowStatus | null, before: string | null, limit: number], FlowRow & { status: FlowStatus }>(
  'flow_list',
  `
SELECT * FROM (${FLOW_SUMMARY}
  WHERE ($2::bigint IS NULL OR f.id < $2)
) t
WHERE $1::text IS NULL OR t.status = $1
ORDER BY t.id::bigint DESC
LIMIT $3`,
  { prepare: false },
);

export const flowJobs = statement<[id: string], JobRow>('flow_jobs', withWaitingFor(`rows AS (SELECT * FROM herald.jobs WHERE flow_id = $1)`));

export const flowEdges = statement<[id: string], { parent: string; child: string }>(
  'flow_edges',
  `
SELECT e.parent::text AS parent, e.child::text AS child
FROM herald.jobs j JOIN herald.job_edges e ON e.child = j.id
WHERE j.flow_id = $1
ORDER BY e.child, e.pos`,
);

// Flow-wide actions lock the rows they change in id order, as the settlers do.
const inFlow = (where: string) => `SELECT id FROM herald.jobs WHERE flow_id = $1 AND ${where} ORDER BY id FOR UPDATE`;

/** Every unfinished job of the flow: queued and blocked ones end cancelled, running ones are asked to stop. */
export const cancelFlow = statement<[id: string], { id: string }>(
  'flow_cancel',
  `
WITH t AS (${inFlow(CANCEL.where)})
UPDATE herald.jobs SET ${CANCEL.set} FROM t WHERE herald.jobs.id = t.id AND ${CANCEL.where}
RETURNING herald.jobs.id::text AS id`,
);

// Every failed or cancelled job of the flow runs again: one without parents is queued, one with
// parents waits for them (the triggers settle it, so one whose parents all succeeded is queued).
export const retryFlow = statement<[id: string], { id: string }>(
  'flow_retry',
  `
WITH t AS (${inFlow(RETRY.where)})
UPDATE herald.jobs SET ${RETRY.set} FROM t WHERE herald.jobs.id = t.id AND ${RETRY.where}
RETURNING herald.jobs.id::text AS id`,
);

/** A parent as its child's handler sees it (ctx.parents); a deleted parent is missing. */
export interface ParentRow {
  id: string;
  ref: string | null;
  kind: string;
  status: JobStatus;
  result: unknown;
}

export const parentsOf = statement<[child: string], ParentRow>(
  'flow_parents',
  `
SELECT p.id::text AS id, p.ref, p.kind, p.status, p.result
FROM herald.job_edges e JOIN herald.jobs p ON p.id = e.parent
WHERE e.child = $1
ORDER BY e.pos`,
);

export const childrenOf = statement<[parent: string], Omit<ParentRow, 'result'>>(
  'flow_children',
  `
SELECT c.id::text AS id, c.ref, c.kind, c.status
FROM herald.job_edges e JOIN herald.jobs c ON c.id = e.child
WHERE e.parent = $1
ORDER BY c.id`,
);

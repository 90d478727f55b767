import { QUEUE_HEAD_LOOK_PAST } from '../defaults.ts';
import { LIVE_KEYS, WORKER_IS_LIVE, workerRuns } from './live.ts';
import { statement } from './statement.ts';

/** A queue with a ready job: how long its work has waited, split by whether a live worker runs it. */
export interface QueueHeadRow {
  queue: string;
  /**
   * How long the oldest ready job that a live worker runs has been ready (since its available_at),
   * in seconds; null when none of the first QUEUE_HEAD_LOOK_PAST ready jobs is one.
   */
  oldest_ready_s: number | null;
  /** When no live worker runs the queue's oldest ready job: how long it has been ready, and its kind. */
  no_worker_s: number | null;
  no_worker_kind: string | null;
  /** Live workers that take the queue (their --queues name it, or they take every queue). */
  live_workers: number;
}

// The head of each queue, without reading the queue: a skip scan over jobs_queued_queue (queue,
// available_at WHERE queued) finds the next queue name with one index descent and its oldest
// queued job with the same, so the cost is a few descents per queue at any depth (no count, no
// table scan). A queue whose oldest queued job is still ahead (runAt) has no ready job. Paused
// queues wait on purpose and dead-letter queues are parking lots: neither is listed.
//
// A ready job that no live worker runs (a mistyped kind, a capability nobody has) is not a stall
// of the queue: the head it makes is reported as no_worker, and the stall is judged on the oldest
// ready job a live worker runs, found by walking on past such jobs, oldest first. The walk stops
// at the first one, so a queue whose head runs costs nothing more; it looks at most
// QUEUE_HEAD_LOOK_PAST jobs, and not at all when no live worker takes the queue.
export const queueHeads = statement<[], QueueHeadRow>(
  'queue_heads',
  `
WITH RECURSIVE heads AS (
  (SELECT j.queue, j.available_at, j.kind, j.requires FROM herald.jobs j WHERE j.status = 'queued' ORDER BY j.queue, j.available_at LIMIT 1)
  UNION ALL
  SELECT nx.queue, nx.available_at, nx.kind, nx.requires
  FROM heads h, LATERAL (
    SELECT j.queue, j.available_at, j.kind, j.requires FROM herald.jobs j
    WHERE j.status = 'queued' AND j.queue > h.queue
    ORDER BY j.queue, j.available_at LIMIT 1
  ) nx
),
live_keys AS MATERIALIZED (${LIVE_KEYS}),
live AS MATERIALIZED (SELECT w.queues, w.kinds, w.capabilities FROM herald.workers w WHERE ${WORKER_IS_LIVE}),
ready AS (
  SELECT h.queue, h.available_at, h.kind,
         EXISTS (SELECT 1 FROM live w WHERE ${workerRuns('h')}) AS head_runs,
         (SELECT count(*) FROM live w WHERE w.queues IS NULL OR h.queue = ANY(w.queues))::int AS live_workers
  FROM heads h
  LEFT JOIN herald.queues s ON s.queue = h.queue
  WHERE h.available_at <= now()
    AND NOT coalesce(s.paused, false)
    AND h.queue NOT IN (SELECT d.dead_letter FROM herald.queues d WHERE d.dead_letter IS NOT NULL)
)
SELECT r.queue,
       extract(epoch FROM now() - CASE WHEN r.head_runs THEN r.available_at ELSE runs.available_at END)::float8 AS oldest_ready_s,
       CASE WHEN NOT r.head_runs THEN extract(epoch FROM now() - r.available_at)::float8 END AS no_worker_s,
       CASE WHEN NOT r.head_runs THEN r.kind END AS no_worker_kind,
       r.live_workers
FROM ready r
LEFT JOIN LATERAL (
  SELECT p.available_at FROM (
    SELECT j.available_at, j.queue, j.kind, j.requires FROM herald.jobs j
    WHERE j.status = 'queued' AND j.queue = r.queue AND j.available_at <= now()
    ORDER BY j.available_at
    LIMIT ${QUEUE_HEAD_LOOK_PAST}
  ) p
  WHERE EXISTS (SELECT 1 FROM live w WHERE ${workerRuns('p')})
  LIMIT 1
) runs ON NOT r.head_runs AND r.live_workers > 0
ORDER BY r.queue`,
);

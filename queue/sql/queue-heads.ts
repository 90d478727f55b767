import { LIVE_KEYS, WORKER_IS_LIVE } from './live.ts';
import { statement } from './statement.ts';

/** A queue whose oldest queued job could have started by now, and who could take it. */
export interface QueueHeadRow {
  queue: string;
  /** How long its oldest ready job has been ready (since its available_at), in seconds. */
  oldest_ready_s: number;
  /** Live workers that take the queue (their --queues name it, or they take every queue). */
  live_workers: number;
}

// The head of each queue, without reading the queue: a skip scan over jobs_queued_queue (queue,
// available_at WHERE queued) finds the next queue name with one index descent and its oldest
// queued job with the same, so the cost is a few descents per queue at any depth (no count, no
// table scan). A queue whose oldest queued job is still ahead (runAt) has no ready job. Paused
// queues wait on purpose and dead-letter queues are parking lots: neither is listed.
export const queueHeads = statement<[], QueueHeadRow>(
  'queue_heads',
  `
WITH RECURSIVE heads AS (
  (SELECT j.queue, j.available_at FROM herald.jobs j WHERE j.status = 'queued' ORDER BY j.queue, j.available_at LIMIT 1)
  UNION ALL
  SELECT nx.queue, nx.available_at
  FROM heads h, LATERAL (
    SELECT j.queue, j.available_at FROM herald.jobs j
    WHERE j.status = 'queued' AND j.queue > h.queue
    ORDER BY j.queue, j.available_at LIMIT 1
  ) nx
),
live_keys AS MATERIALIZED (${LIVE_KEYS}),
live AS MATERIALIZED (SELECT w.queues FROM herald.workers w WHERE ${WORKER_IS_LIVE})
SELECT h.queue,
       extract(epoch FROM now() - h.available_at)::float8 AS oldest_ready_s,
       (SELECT count(*) FROM live w WHERE w.queues IS NULL OR h.queue = ANY(w.queues))::int AS live_workers
FROM heads h
LEFT JOIN herald.queues s ON s.queue = h.queue
WHERE h.available_at <= now()
  AND NOT coalesce(s.paused, false)
  AND h.queue NOT IN (SELECT d.dead_letter FROM herald.queues d WHERE d.dead_letter IS NOT NULL)
ORDER BY h.queue`,
);

import type { Nullable } from '../json.ts';
import type { workers } from '../schema/index.ts';
import type { PgRow } from './rows.ts';
import { LIVE_KEYS, WORKER_IS_LIVE } from './live.ts';
import { statement } from './statement.ts';

// The worker registry. A worker upserts its row at start and after every listener reconnect
// (its liveness key may change), refreshes last_seen_at, and deletes the row when it stops.

export const registerWorker = statement<
  [
    id: string,
    host: string,
    pid: number,
    queues: string[] | null,
    kinds: string[],
    capabilities: string[],
    concurrency: number,
    lockKey: number | null,
  ],
  { id: string }
>(
  'register_worker',
  `
INSERT INTO herald.workers AS w (id, host, pid, queues, kinds, capabilities, concurrency, lock_key)
VALUES ($1, $2, $3, $4::text[], $5::text[], $6::text[], $7, $8)
ON CONFLICT (id) DO UPDATE SET lock_key = excluded.lock_key, last_seen_at = now()
RETURNING w.id`,
);

/** Returns no row when the row is gone (pruned while this worker was cut off): register again. */
export const touchWorker = statement<[id: string, lockKey: number | null], { id: string }>(
  'touch_worker',
  `UPDATE herald.workers SET last_seen_at = now(), lock_key = $2 WHERE id = $1 RETURNING id`,
);

export const unregisterWorker = statement<[id: string]>('unregister_worker', `DELETE FROM herald.workers WHERE id = $1`);

/** Rows of workers that died without unregistering. */
export const pruneDeadWorkers = statement<[], { id: string }>(
  'prune_workers',
  `
WITH live_keys AS MATERIALIZED (${LIVE_KEYS})
DELETE FROM herald.workers w WHERE NOT (${WORKER_IS_LIVE})
RETURNING w.id`,
);

// Every live registered worker, idle ones too, with the jobs it runs; then any holder of
// running jobs that is not registered (a process using the core API directly), as before
// the registry existed.
export const listWorkers = statement<
  [],
  { worker: string } & Nullable<Omit<PgRow<typeof workers>, 'id' | 'lock_key'>> & { running: number; since: Date | null; jobs: string[] }
>(
  'workers',
  `
WITH live_keys AS MATERIALIZED (${LIVE_KEYS}),
holders AS (
  SELECT locked_by AS worker, count(*)::int AS running, min(started_at) AS since,
         array_agg(id::text ORDER BY id) AS jobs
  FROM herald.jobs
  WHERE status = 'running'
  GROUP BY locked_by
)
SELECT w.id AS worker, w.host, w.pid, w.queues, w.kinds, w.capabilities, w.concurrency,
       w.started_at, w.last_seen_at,
       coalesce(h.running, 0) AS running, h.since, coalesce(h.jobs, '{}') AS jobs
FROM herald.workers w LEFT JOIN holders h ON h.worker = w.id
WHERE ${WORKER_IS_LIVE}
UNION ALL
SELECT h.worker, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, h.running, h.since, h.jobs
FROM holders h
WHERE NOT EXISTS (SELECT 1 FROM herald.workers w WHERE w.id = h.worker)
ORDER BY 1`,
);

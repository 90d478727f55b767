import { WORKER_STALE_MS } from '../defaults.ts';
import { LOCK_NAMESPACE } from '../locks.ts';

// Who is alive. Each worker holds a session advisory lock (its liveness key) on its listener
// connection; PostgreSQL drops it the instant the process or its connection dies. The reaper
// and the worker registry both read the set of keys held right now.
export const LIVE_KEYS = `
  SELECT objid::bigint::int AS key
  FROM pg_locks
  WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = ${LOCK_NAMESPACE}::bigint::oid
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;


/** A registry row `w` refreshed lately. */
export const WORKER_SEEN_LATELY = `w.last_seen_at > now() - make_interval(secs => ${WORKER_STALE_MS / 1000})`;

/**
 * Registry row `w` runs job `j` (a row with queue, kind and requires): it takes the job's queue,
 * knows its kind and has every capability it requires. Whether the worker is live is the caller's.
 */
export const workerRuns = (j: string) =>
  `(w.queues IS NULL OR ${j}.queue = ANY(w.queues)) AND ${j}.kind = ANY(w.kinds) AND ${j}.requires <@ w.capabilities`;

/**
 * A registered worker is live while its liveness lock is held (or it has none: a worker behind
 * a transaction pooler) and it refreshed its row lately. `w` is a herald.workers row; the query
 * must define the CTE `live_keys` as LIVE_KEYS.
 */
export const WORKER_IS_LIVE = `
  (w.lock_key IS NULL OR w.lock_key IN (SELECT key FROM live_keys))
  AND ${WORKER_SEEN_LATELY}`;

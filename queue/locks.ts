// Advisory lock keys, all in one namespace ('HRLD') so they are easy to spot in pg_locks.
// Two-int form: pg_advisory_lock(NAMESPACE, key) shows as classid=NAMESPACE, objid=key, objsubid=2.
export const LOCK_NAMESPACE = 0x48524c44;
/** Migrations run one process at a time. */
export const MIGRATE_KEY = 0;
/** One reaper at a time across all workers (pg_try_advisory_xact_lock). */
export const REAPER_KEY = 1;
/** One queue-history rollup at a time (pg_try_advisory_xact_lock). */
export const HISTORY_KEY = 2;
/** One scheduler turn at a time across all workers (pg_try_advisory_xact_lock). */
export const SCHEDULER_KEY = 3;
/** Liveness keys that workers hold on their listener session lie above this. */
export const FIRST_LIVENESS_KEY = 1000;

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
/**
 * Signals to a job and a run about to wait for one take this namespace's lock on the job's id
 * (modulo 2^31 - 1: two jobs may share a key, which only orders them), not its row lock, so a claim
 * (FOR UPDATE SKIP LOCKED) never skips a job because a signal was being sent to it.
 */
export const SIGNAL_LOCK_NAMESPACE = 0x48524c53;
/** Liveness keys that workers hold on their listener session lie above this. */
export const FIRST_LIVENESS_KEY = 1000;

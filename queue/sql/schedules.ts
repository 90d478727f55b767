import { LOCK_NAMESPACE, SCHEDULER_KEY } from '../locks.ts';
import { statement } from './statement.ts';

/** A row of herald.schedules. */
export interface ScheduleRow {
  name: string;
  cron: string;
  timezone: string;
  job: Record<string, unknown>;
  paused: boolean;
  next_run_at: Date | null;
  last_run_at: Date | null;
  last_job_id: string | null;
}

/** Creates or replaces a schedule; `created` tells which. next_run_at is computed by the caller. */
export const putSchedule = statement<
  [name: string, cron: string, timezone: string, job: string, paused: boolean, nextRunAt: Date | null],
  ScheduleRow & { created: boolean }
>(
  'put_schedule',
  `
INSERT INTO herald.schedules AS s (name, cron, timezone, job, paused, next_run_at)
VALUES ($1, $2, $3, $4::jsonb, $5, $6)
ON CONFLICT (name) DO UPDATE SET
  cron = excluded.cron, timezone = excluded.timezone, job = excluded.job, paused = excluded.paused,
  next_run_at = excluded.next_run_at, updated_at = now()
RETURNING s.*, (xmax = 0) AS created`,
);

export const deleteSchedule = statement<[name: string], { name: string }>(
  'delete_schedule',
  `DELETE FROM herald.schedules WHERE name = $1 RETURNING name`,
);

export const listSchedules = statement<[], ScheduleRow>('schedules', `SELECT * FROM herald.schedules ORDER BY name`);

export const lockSchedule = statement<[name: string], ScheduleRow>(
  'lock_schedule',
  `SELECT * FROM herald.schedules WHERE name = $1 FOR UPDATE`,
);

/**
 * The scheduler's turn: one process at a time (a transaction-scoped try-lock, released by its
 * commit, or by PostgreSQL when the process dies), and the database's clock, which every
 * process shares.
 */
export const schedulerTurn = statement<[], { ok: boolean; now: Date }>(
  'scheduler_turn',
  `SELECT pg_try_advisory_xact_lock(${LOCK_NAMESPACE}, ${SCHEDULER_KEY}) AS ok, now() AS now`,
);

export const dueSchedules = statement<[], ScheduleRow>(
  'due_schedules',
  `
SELECT * FROM herald.schedules
WHERE NOT paused AND next_run_at <= now()
ORDER BY next_run_at
FOR UPDATE`,
);

export const markScheduleRun = statement<[name: string, lastRunAt: Date, lastJobId: string, nextRunAt: Date | null]>(
  'mark_schedule_run',
  `UPDATE herald.schedules SET last_run_at = $2, last_job_id = $3, next_run_at = $4 WHERE name = $1`,
);

/** A tick whose job could not be made: the schedule moves on to its next tick. */
export const skipScheduleTick = statement<[name: string, nextRunAt: Date | null]>(
  'skip_schedule_tick',
  `UPDATE herald.schedules SET next_run_at = $2 WHERE name = $1`,
);

/** The database's clock: ticks are counted from it, as due-ness is. */
export const databaseNow = statement<[], { now: Date }>('database_now', `SELECT now() AS now`);

/** When the next unpaused schedule is due (epoch ms), or null. */
export const nextScheduleDue = statement<[], { at_ms: number | null }>(
  'next_schedule_due',
  `SELECT extract(epoch FROM min(next_run_at))::float8 * 1000 AS at_ms FROM herald.schedules WHERE NOT paused`,
);

// Schedules: recurring jobs by cron. Workers fire them (one scheduler turn at a time across the
// fleet); admins create, replace, delete and run them now.
import { latestTick, nextTick, parseCron } from '../cron.ts';
import { DEFAULTS } from '../defaults.ts';
import { NotFoundError, fromPgError } from '../errors.ts';
import type { Job } from '../job.ts';
import type { Actor } from '../schema/index.ts';
import {
  databaseNow, deleteSchedule, dueSchedules, listSchedules, lockSchedule, markScheduleRun, nextScheduleDue, putSchedule, schedulerTurn,
  skipScheduleTick,
  type ScheduleRow,
} from '../sql/schedules.ts';
import type { Db } from './db.ts';
import { insertJobs, toRecord, type EnqueueInput } from './insert.ts';
import { scheduleKey } from '../schedule-keys.ts';

/** The job a schedule makes each tick: an enqueue body without idempotencyKey. */
type ScheduleJob = Omit<EnqueueInput, 'idempotencyKey'>;

export interface ScheduleInput {
  cron: string;
  /** IANA name; default UTC. */
  timezone?: string;
  job: ScheduleJob;
  paused?: boolean;
}

export interface Schedule {
  name: string;
  cron: string;
  timezone: string;
  job: ScheduleJob;
  paused: boolean;
  /** The next tick that will make a job; null while paused. */
  nextRunAt: string | null;
  lastRunAt: string | null;
  lastJobId: string | null;
}

const toSchedule = (r: ScheduleRow): Schedule => ({
  name: r.name,
  cron: r.cron,
  timezone: r.timezone,
  job: r.job as unknown as ScheduleJob,
  paused: r.paused,
  nextRunAt: r.next_run_at?.toISOString() ?? null,
  lastRunAt: r.last_run_at?.toISOString() ?? null,
  lastJobId: r.last_job_id,
});

export class ScheduleService {
  constructor(private readonly db: Db) {}

  /**
   * Creates or replaces a schedule. Its next tick counts from now: replacing or resuming one
   * never makes jobs for ticks that passed meanwhile. A bad cron or zone is a ValidationError.
   */
  async putSchedule(name: string, input: ScheduleInput): Promise<{ schedule: Schedule; created: boolean }> {
    const timezone = input.timezone ?? DEFAULTS.timezone;
    parseCron(input.cron, timezone);
    toRecord(input.job); // the template must make a valid job
    const paused = input.paused ?? false;
    // The database's clock, as due-ness (next_run_at <= now()) uses: a host clock behind it
    // would make a tick that is due at once.
    const next = paused ? null : nextTick(input.cron, timezone, (await this.db.run(databaseNow, [])).rows[0].now);
    try {
      const { rows } = await this.db.run(putSchedule, [name, input.cron, timezone, JSON.stringify(input.job), paused, next]);
      return { schedule: toSchedule(rows[0]), created: rows[0].created };
    } catch (err) {
      throw fromPgError(err);
    }
  }

  /** False when there was no such schedule. */
  async deleteSchedule(name: string): Promise<boolean> {
    return (await this.db.run(deleteSchedule, [name])).rows.length === 1;
  }

  async schedules(): Promise<Schedule[]> {
    return (await this.db.run(listSchedules, [])).rows.map(toSchedule);
  }

  /** Makes the schedule's job now ("run now"), outside its ticks; its enqueued event names `actor` (data.by). */
  async runSchedule(name: string, actor?: Actor): Promise<Job> {
    const { db } = this;
    return db.transaction(async (c) => {
      const { rows } = await db.run(lockSchedule, [name], c);
      if (!rows[0]) throw new NotFoundError(`schedule "${name}" does not exist`);
      const [made] = await insertJobs(db, c, [toRecord(rows[0].job as unknown as ScheduleJob)]);
      if (made instanceof Error) throw made;
      await db.run(markScheduleRun, [name, new Date(made.job.createdAt), made.job.id, rows[0].next_run_at], c);
      await db.stamp(actor, c);
      return made.job;
    });
  }

  /**
   * One scheduler turn: makes the job of every due schedule, for its LATEST tick that has come
   * (ticks missed while no scheduler ran are skipped), with the idempotency key
   * schedule:NAME:TICK_ISO, and moves it to its next tick, in one transaction. Each schedule
   * runs in its own savepoint: one that cannot make its job (`failed`) skips that tick and
   * never holds the others back. Only one process takes a turn at a time; `busy` says another
   * one has it now (try again shortly). Ticks are read off the database's clock.
   */
  async fireDueSchedules(): Promise<{ busy: boolean; made: Job[]; failed: { name: string; error: string }[] }> {
    const { db } = this;
    return db.transaction(async (c) => {
      const turn = (await db.run(schedulerTurn, [], c)).rows[0];
      if (!turn.ok) return { busy: true, made: [], failed: [] };
      const made: Job[] = [];
      const failed: { name: string; error: string }[] = [];
      for (const s of (await db.run(dueSchedules, [], c)).rows) {
        const tick = latestTick(s.cron, s.timezone, turn.now) ?? s.next_run_at!;
        const next = nextTick(s.cron, s.timezone, turn.now);
        await c.query('SAVEPOINT schedule');
        try {
          const [r] = await insertJobs(db, c, [toRecord({ ...(s.job as unknown as ScheduleJob), idempotencyKey: scheduleKey(s.name, tick) })]);
          if (r instanceof Error) throw r;
          await db.run(markScheduleRun, [s.name, tick, r.job.id, next], c);
          await c.query('RELEASE SAVEPOINT schedule');
          made.push(r.job);
        } catch (err) {
          await c.query('ROLLBACK TO SAVEPOINT schedule');
          await db.run(skipScheduleTick, [s.name, next], c);
          failed.push({ name: s.name, error: (err as Error).message });
        }
      }
      return { busy: false, made, failed };
    });
  }

  /** When the next unpaused schedule is due, or null. */
  async nextScheduleDue(): Promise<Date | null> {
    const at = (await this.db.run(nextScheduleDue, [])).rows[0]?.at_ms;
    return at == null ? null : new Date(at);
  }
}

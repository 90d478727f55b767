// Every worker runs the scheduler; the database decides which one acts. At the next due time
// (read from herald.schedules, re-read whenever a schedule changes: herald_control 'schedules')
// each scheduler asks for a turn. One gets it and makes the jobs of the due ticks; the others
// find the turn taken and look again shortly, so if the one that had it is killed mid-turn (its
// transaction rolls back and its lock goes with its connection), another makes the job within
// a moment. The idempotency key schedule:NAME:TICK_ISO makes a second job for a tick impossible.
import type { ScheduleService } from '../queue/services/schedules.ts';
import type { Logger } from '../queue/log.ts';

/** How soon to look again when another process has the turn. */
const BUSY_RETRY_MS = 200;
/** Longest sleep between looks, in case a change notification was missed. */
const MAX_SLEEP_MS = 30_000;
/** Least sleep: a local clock ahead of the database's must not spin. */
const MIN_SLEEP_MS = 20;

export class Scheduler {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(private readonly schedules: ScheduleService, private readonly log: Logger) {}

  start(): void {
    this.look(0);
  }

  /** Schedules changed: re-read the next due time. */
  changed(): void {
    this.look(0);
  }

  private look(delay: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.turn(), Math.max(0, delay));
  }

  private turn(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.fire().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.look(0);
      }
    });
  }

  private async fire(): Promise<void> {
    let next = MAX_SLEEP_MS;
    try {
      const { busy, made, failed } = await this.schedules.fireDueSchedules();
      // Debug: a schedule every few seconds would bury everything else at info; its job's events record it.
      for (const job of made) this.log.debug({ job: job.id, kind: job.kind, key: job.idempotencyKey }, 'schedule made a job');
      for (const f of failed) this.log.warn({ schedule: f.name, err: f.error }, 'schedule could not make its job: tick skipped');
      if (busy) next = BUSY_RETRY_MS;
      else {
        const due = await this.schedules.nextScheduleDue();
        if (due) next = Math.min(MAX_SLEEP_MS, Math.max(MIN_SLEEP_MS, due.getTime() - Date.now()));
      }
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'scheduler turn failed');
      next = 1_000;
    }
    this.look(next);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}

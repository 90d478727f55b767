// Cron expressions of schedules, read by croner: 5 fields, or 6 with seconds first, in an IANA
// time zone. The server validates with it; the scheduler computes ticks with it.
import { Cron } from 'croner';
import { ValidationError } from './errors.ts';

/** The zone names Intl knows; croner would only fail later, on the first date it converts. */
function checkTimezone(timezone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw new ValidationError(`timezone "${timezone}" is not an IANA time zone name (like UTC, Europe/Paris or America/New_York)`);
  }
}

/** A parsed schedule; a bad expression or zone is a ValidationError that says what is wrong. */
export function parseCron(cron: string, timezone: string): Cron {
  checkTimezone(timezone);
  const fields = cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) {
    throw new ValidationError(`cron "${cron}" has ${fields} field(s); write 5 (minute hour day month weekday) or 6 (second first)`);
  }
  try {
    return new Cron(cron, { timezone, paused: true, mode: '5-or-6-parts' });
  } catch (err) {
    throw new ValidationError(`cron "${cron}" is not valid: ${(err as Error).message.replace(/^CronPattern: /, '')}`);
  }
}

/** The first tick strictly after `after`, or null when there is none. */
export function nextTick(cron: string, timezone: string, after: Date): Date | null {
  return parseCron(cron, timezone).nextRun(after);
}

/** The latest tick at or before `at`, or null. */
export function latestTick(cron: string, timezone: string, at: Date): Date | null {
  // previousRuns excludes a run exactly at its reference: look from just after `at`.
  return parseCron(cron, timezone).previousRuns(1, new Date(at.getTime() + 1))[0] ?? null;
}

// NOTIFY channels; the triggers in drizzle/0001_triggers.sql send on them.
/** Payload "QUEUE" (runnable now) or "QUEUE EPOCH_MS" (runnable then). */
export const JOBS_CHANNEL = 'herald_jobs';
/** Empty payload: job_events has new rows. */
export const EVENTS_CHANNEL = 'herald_events';
/** Payload "cancel WORKER": a job that WORKER holds was asked to cancel. */
export const CONTROL_CHANNEL = 'herald_control';

/** Parses a herald_jobs payload. */
export function parseJobsPayload(payload: string): { queue: string; at: number | null } {
  const [queue, at] = payload.split(' ');
  return { queue, at: at ? Number(at) : null };
}

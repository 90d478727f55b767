// NOTIFY channels; the triggers send on them (their live code: drizzle/current/functions/).
/**
 * Payload "QUEUE": work became runnable now in QUEUE (an insert, a retry, a requeue, or a slot
 * of a paused or limited queue freed); "QUEUE EPOCH_MS": work becomes runnable then.
 */
export const JOBS_CHANNEL = 'herald_jobs';
/** Empty payload: job_events has new rows. */
export const EVENTS_CHANNEL = 'herald_events';
/**
 * Payload "cancel WORKER": a job that WORKER holds was asked to cancel; "queues": queue settings
 * changed (workers re-read them); "schedules": schedules changed (schedulers re-read the next due time).
 */
export const CONTROL_CHANNEL = 'herald_control';

/** Parses a herald_jobs payload. */
export function parseJobsPayload(payload: string): { queue: string; at: number | null } {
  const [queue, at] = payload.split(' ');
  return { queue, at: at ? Number(at) : null };
}

/**
 * What a trigger's wake-up names: a herald_jobs notification of one queue, or herald_events. A
 * listener passes the barriers of the targets it heard of before it reads (sql/wake.ts).
 */
export function wakeTarget(channel: typeof JOBS_CHANNEL, queue: string): string;
export function wakeTarget(channel: typeof EVENTS_CHANNEL): string;
export function wakeTarget(channel: string, queue?: string): string {
  return queue === undefined ? channel : `${channel} ${queue}`;
}

// A job claimed ahead has waited in the buffer since its claim. Before it starts, the database
// says whether its queue has been paused or limited since (the gate row) and whether its
// expireAt has passed (the database's clock, not this host's). Read from the database rather
// than the worker's cached settings: a PATCH that has returned is always seen, notified or not.
import type { ClaimedJob } from '../queue/claimed.ts';
import type { WorkService } from '../queue/services/work.ts';

export async function mayStart(work: Pick<WorkService, 'startGate'>, jobs: Pick<ClaimedJob, 'queue' | 'expireAtMs'>[]): Promise<boolean[]> {
  const { held, now } = await work.startGate();
  return jobs.map((j) => !held.includes(j.queue) && (j.expireAtMs === null || j.expireAtMs > now.getTime()));
}

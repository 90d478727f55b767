// A flow's live state on the board: job statuses moved by stream events, the counts and the
// flow's status derived from them (as the server derives them), and a blocked job's wait.
import type { BoardEvent, FlowStatus, JobStatus } from '../types';

const ENDED: ReadonlySet<JobStatus> = new Set(['succeeded', 'failed', 'cancelled']);

const hasEnded = (s: JobStatus) => ENDED.has(s);

/**
 * Applies the events of flow `flowId` to `statuses` (job id → status). `unknown` says an event
 * named a job the map lacks: the page's copy of the flow is incomplete, so it fetches it again.
 * The ids of the jobs it saw an event of are added to `seen`.
 */
export function applyFlowEvents(
  statuses: Map<string, JobStatus>,
  flowId: string,
  batch: readonly BoardEvent[],
  seen?: Set<string>,
): { changed: boolean; unknown: boolean } {
  let changed = false;
  let unknown = false;
  for (const ev of batch) {
    if (ev.flowId !== flowId) continue;
    seen?.add(ev.jobId);
    const before = statuses.get(ev.jobId);
    if (before === undefined) {
      unknown ||= ev.type !== 'deleted';
      continue;
    }
    if (before !== ev.status) {
      statuses.set(ev.jobId, ev.status);
      changed = true;
    }
  }
  return { changed, unknown };
}

export function countStatuses(statuses: Iterable<JobStatus>): Record<JobStatus, number> {
  const counts: Record<JobStatus, number> = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0, blocked: 0 };
  for (const s of statuses) counts[s]++;
  return counts;
}

/** Running until every job has ended, then succeeded when all did, else failed. */
export function flowStatusOf(counts: Record<JobStatus, number>): FlowStatus {
  if (counts.queued + counts.running + counts.blocked > 0) return 'running';
  return counts.failed + counts.cancelled > 0 ? 'failed' : 'succeeded';
}

/**
 * What a blocked job waits for, in words: "waiting for 3 of 5 parents". `total` is the job's
 * dependsOn length; a parent missing from `parents` was deleted, which counts as ended.
 */
export function parentsWaitingText(parents: readonly { status: JobStatus }[], total: number): string {
  const unfinished = parents.filter((p) => !hasEnded(p.status)).length;
  return `waiting for ${unfinished} of ${total} parent${total === 1 ? '' : 's'} to end`;
}

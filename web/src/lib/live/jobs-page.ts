// The first page of the jobs table, kept current from the stream.
import type { BoardEvent, BoardJob, JobFilter } from '../types';
import { compareIds } from './ids';
import { applyEventToJob, jobFromEvent } from './job-updates';

/** A job's wait (its waitingFor), or the one a `sleeping` or `waiting` event starts; null for other events. */
function waitOf(ev: { type?: string; waitingFor?: string | null; data?: Record<string, unknown> | null }): string | null {
  if (ev.type === undefined) return ev.waitingFor ?? null;
  if (ev.type === 'sleeping') return 'sleep';
  if (ev.type === 'waiting') return ev.data?.childId != null ? 'child' : 'signal';
  return null;
}

/**
 * `status: scheduled` is a queued job whose runAt is still ahead, as the API filters it; a
 * `waitingFor` filter takes the event that starts such a wait.
 */
export function matchesFilter(
  job: { queue: string; kind: string; status: string; flowId?: string | null; runAt?: string | null; type?: string; waitingFor?: string | null; data?: Record<string, unknown> | null },
  f: JobFilter,
  now = Date.now(),
): boolean {
  if (f.queue && job.queue !== f.queue) return false;
  if (f.kind && job.kind !== f.kind) return false;
  if (f.flow && job.flowId !== f.flow) return false;
  if (f.waitingFor && (job.status !== 'queued' || waitOf(job) !== f.waitingFor)) return false;
  if (f.status === 'scheduled') {
    const runAt = job.runAt ?? job.data?.runAt;
    return job.status === 'queued' && typeof runAt === 'string' && Date.parse(runAt) > now;
  }
  if (f.status && job.status !== f.status) return false;
  return true;
}

/**
 * Applies a batch of events to the first page of the jobs table (newest first, by id).
 * Rows on the page are updated in place. A job not on the page is added at its sorted place when,
 * after the event, it matches the filter and belongs on this page; then the page is trimmed to
 * `limit` rows and the returned `next` cursor follows the last kept row.
 * Rows that stop matching the filter stay (marked by the caller) so nothing jumps under the pointer.
 * With `firstPage: false` nothing is added, and the events of jobs not on the page come back in
 * `missed` (the jobs table applies those to page one a few times a second, not every frame).
 */
export function mergeIntoPage(
  rows: BoardJob[],
  batch: BoardEvent[],
  opts: { filter: JobFilter; limit: number; firstPage: boolean; next: string | null },
): { rows: BoardJob[]; next: string | null; changed: boolean; missed: BoardEvent[] } {
  const byId = new Map<string, BoardJob>();
  for (const r of rows) byId.set(r.id, r);
  let added: BoardJob[] | null = null;
  const missed: BoardEvent[] = [];
  for (const ev of batch) {
    const row = byId.get(ev.jobId);
    if (row) {
      applyEventToJob(row, ev);
      continue;
    }
    if (!opts.firstPage) {
      missed.push(ev);
      continue;
    }
    if (!matchesFilter(ev, opts.filter)) continue;
    const job = jobFromEvent(ev);
    byId.set(job.id, job);
    (added ??= []).push(job);
  }
  if (!added) return { rows, next: opts.next, changed: false, missed };

  const full = rows.length >= opts.limit || opts.next !== null;
  const oldest = rows.length ? rows[rows.length - 1].id : null;
  // A job older than the page's last row belongs to a later page when the page is full.
  const fits = added.filter((j) => !full || oldest === null || compareIds(j.id, oldest) > 0);
  if (fits.length === 0) return { rows, next: opts.next, changed: false, missed };

  const merged = [...rows, ...fits].sort((a, b) => compareIds(b.id, a.id));
  if (merged.length <= opts.limit) return { rows: merged, next: opts.next, changed: true, missed };
  const kept = merged.slice(0, opts.limit);
  return { rows: kept, next: kept[kept.length - 1].id, changed: true, missed };
}

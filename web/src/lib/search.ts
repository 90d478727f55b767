// The jobs view's search filters, as they live in the URL (#/jobs?queue=…&payload=…), so a
// search can be shared and bookmarked. The server validates every value; the board only
// carries them.
import type { JobFilter } from './types';

/** The filters a stream event cannot be judged by (it carries no payload or error text). */
const SEARCH_KEYS = ['group', 'tag', 'payload', 'error', 'createdAfter', 'createdBefore'] as const;
const FILTER_KEYS = ['queue', 'status', 'kind', 'flow', 'waitingFor', ...SEARCH_KEYS] as const;

export function filterFromQuery(query: Record<string, string>): JobFilter {
  const f: JobFilter = {};
  for (const k of FILTER_KEYS) f[k] = query[k] || '';
  return f;
}

/** True when the filter holds a search the stream cannot follow: new jobs then wait for a reload. */
export const isSearch = (f: JobFilter) => SEARCH_KEYS.some((k) => !!f[k]);

/** A datetime-local input's value (local time, no zone) as ISO, or '' when empty/invalid. */
export function localToIso(v: string): string {
  if (!v) return '';
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

/** An ISO time as a datetime-local input's value. */
export function isoToLocal(v: string | undefined): string {
  if (!v) return '';
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The waitingFor filter's choices, in words. */
export const WAITS: Record<string, string> = { signal: 'a signal', sleep: 'a sleep to end', child: 'a job it invoked' };

/** "retry 1,204 failed jobs in queue billing?" */
export function bulkQuestion(action: string, matched: number, f: JobFilter): string {
  const n = matched.toLocaleString('en-US');
  const what = `${f.status ? `${f.status} ` : ''}job${matched === 1 ? '' : 's'}`;
  const where = f.queue ? ` in queue ${f.queue}` : '';
  const more = [f.kind && `kind ${f.kind}`, f.flow && `flow #${f.flow}`, f.waitingFor && `waiting for ${WAITS[f.waitingFor] ?? f.waitingFor}`, f.group && `group ${f.group}`, f.tag && `tag ${f.tag}`, f.payload && `payload ⊇ ${f.payload}`, f.error && `error ~ "${f.error}"`, f.createdAfter && `after ${f.createdAfter}`, f.createdBefore && `before ${f.createdBefore}`]
    .filter(Boolean)
    .join(', ');
  return `${bulkLabel(action)} ${n} ${what}${where}${more ? ` (${more})` : ''}?`;
}

/** The jobs each bulk action changes; the others are counted and left alone. */
export const BULK_ELIGIBLE: Record<string, string> = {
  retry: 'failed and cancelled jobs',
  cancel: 'queued, blocked and running jobs',
  delete: 'succeeded, failed and cancelled jobs',
  redrive: 'dead-letter copies (queued or failed) whose job has not run again',
  run_now: 'queued jobs waiting out a backoff or their run-at time',
};

/** A bulk action as the board names it ("run now", not "run_now"). */
export const bulkLabel = (action: string): string => action.replace('_', ' ');

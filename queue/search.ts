// The job filter of GET /api/jobs and POST /api/jobs/bulk, as the core takes it, and its
// conversion to the parameters of queue/sql/search.ts.
import { ValidationError } from './errors.ts';
import type { JobStatus } from './schema/index.ts';
import type { FilterParams } from './sql/search.ts';

export interface JobFilter {
  queue?: string;
  /** A status, or `scheduled`: queued jobs whose runAt is still ahead. */
  status?: JobStatus | 'scheduled';
  kind?: string;
  /** JSON containment: {"user": 42} matches every payload that holds it. */
  payload?: unknown;
  /** A case-insensitive substring of lastError.message. */
  error?: string;
  createdAfter?: string | Date;
  createdBefore?: string | Date;
  group?: string;
  /** Jobs carrying this tag (among others). */
  tag?: string;
  /** Jobs of this flow (its jobs_flow index serves it: no search window). */
  flow?: string;
  /**
   * Queued jobs whose durable handler sleeps, waits for a signal or waits for a job it invoked,
   * as the Job JSON's waitingFor says (its jobs_waiting index serves it: no search window).
   */
  waitingFor?: DurableWait;
}

/** The waits of a durable handler (jobs.wait.type), as the waitingFor filter takes them. */
export const DURABLE_WAITS = ['sleep', 'signal', 'child'] as const;
export type DurableWait = (typeof DURABLE_WAITS)[number];

/** Filters that need the bounded window (no index serves them); queue, status and kind alone list as they always did. */
export function isSearch(f: JobFilter): boolean {
  return (
    f.payload !== undefined || f.error !== undefined || f.createdAfter !== undefined || f.createdBefore !== undefined ||
    f.group !== undefined || f.tag !== undefined
  );
}

function time(name: string, v: string | Date | undefined): string | null {
  if (v === undefined) return null;
  const d = v instanceof Date ? v : new Date(v);
  if (Number.isNaN(d.getTime())) throw new ValidationError(`${name} "${String(v)}" is not a valid ISO date`);
  return d.toISOString();
}

/** The payload filter as JSON text; a string is taken as JSON (the query-string form). */
function payloadJson(v: unknown): string | null {
  if (v === undefined) return null;
  if (typeof v !== 'string') return JSON.stringify(v);
  try {
    JSON.parse(v);
  } catch {
    throw new ValidationError(`payload must be JSON (for example {"user":42}), got ${JSON.stringify(v.slice(0, 60))}`);
  }
  return v;
}

// ILIKE treats % and _ as wildcards: a substring search means them literally. PostgreSQL text
// cannot hold NUL, so no stored message contains one: say so rather than fail in the database.
function likeSubstring(s: string): string {
  if (s.includes('\0')) throw new ValidationError('error must not contain a NUL character');
  return `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The filter's parameters, in the order of JOB_FILTER. Throws ValidationError for bad values. */
export function filterValues(f: JobFilter): FilterParams {
  return [
    f.queue ?? null,
    // A waiting job is queued: said as a status, so the planner can use the queued rows' indexes.
    f.status === 'scheduled' ? 'queued' : (f.status ?? (f.waitingFor ? 'queued' : null)),
    f.kind ?? null,
    payloadJson(f.payload),
    f.error === undefined ? null : likeSubstring(f.error),
    time('createdAfter', f.createdAfter),
    time('createdBefore', f.createdBefore),
    f.group ?? null,
    f.tag ?? null,
    f.flow ?? null,
    f.status === 'scheduled',
    f.waitingFor ?? null,
  ];
}

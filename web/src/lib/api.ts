// Every HTTP call the board makes, in one place. Errors come back as ApiError carrying the
// server's `message` (Fastify's {statusCode, error, message}) so views can show it as is.

import { auth } from './auth.svelte';
import { normalizeEvent } from './live/normalize-event';
import type { BoardEvent, BulkAction, EnqueueInput, Health, HistoryBucket, HistoryRange, Job, JobFilter, JobPage, QueueCounts, QueueSettingsPatch, Schedule, WorkerInfo } from './types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The sentence a person reads for an error; 401 and 403 are said plainly. */
export function describeError(err: unknown): { text: string; auth: boolean; status: number } {
  if (err instanceof ApiError) {
    if (err.status === 401) return { text: `Token required or unknown token (401): ${err.message}`, auth: true, status: 401 };
    if (err.status === 403) return { text: `Your role cannot do this (403): ${err.message}`, auth: true, status: 403 };
    if (err.status === 0) return { text: err.message, auth: false, status: 0 };
    return { text: err.message, auth: false, status: err.status };
  }
  return { text: err instanceof Error ? err.message : String(err), auth: false, status: -1 };
}

interface RequestOptions {
  body?: unknown;
  /** Statuses whose body is still the answer (health answers 503 with its report). */
  accept?: number[];
}

async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  // No content-type without a body: Fastify rejects an empty JSON body (retry/cancel send none).
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (auth.token) headers.authorization = `Bearer ${auth.token}`;

  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch (e) {
    throw new ApiError(0, `Cannot reach the server (${e instanceof Error ? e.message : 'network error'}).`);
  }

  const text = await res.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (res.ok || opts.accept?.includes(res.status)) return data as T;

  const message =
    data && typeof data === 'object' && typeof (data as { message?: unknown }).message === 'string'
      ? (data as { message: string }).message
      : `${res.status} ${res.statusText || 'error'}`;
  if (res.status === 401) auth.demand(message);
  throw new ApiError(res.status, message, data);
}

function query(params: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

const jobPath = (id: string) => `/api/jobs/${encodeURIComponent(id)}`;

export async function listQueues(): Promise<QueueCounts[]> {
  const r = await request<{ queues: QueueCounts[] }>('GET', '/api/queues');
  return r.queues ?? [];
}

export function listJobs(
  filter: JobFilter & { limit?: number; before?: string | null },
): Promise<JobPage> {
  return request('GET', `/api/jobs${query({ ...filter })}`);
}

/** Retries, cancels or deletes every job the filter matches; `dryRun` only counts them. */
export function bulkAction(action: BulkAction, filter: JobFilter, dryRun: boolean): Promise<{ matched: number; affected?: number }> {
  const f = Object.fromEntries(Object.entries(filter).filter(([, v]) => v !== undefined && v !== ''));
  return request('POST', '/api/jobs/bulk', { body: { action, filter: f, dryRun } });
}

export async function queueHistory(queue: string, range: HistoryRange): Promise<HistoryBucket[]> {
  const r = await request<{ buckets: HistoryBucket[] }>('GET', `/api/queues/${encodeURIComponent(queue)}/stats${query({ range })}`);
  return r.buckets ?? [];
}

export function getJob(id: string): Promise<Job> {
  return request('GET', jobPath(id));
}

/** A job's whole timeline, oldest first, fetched a page (up to 1000 events) at a time. */
export async function getJobEvents(id: string): Promise<BoardEvent[]> {
  const all: BoardEvent[] = [];
  for (let after: string | null = null; ; ) {
    const r: { events?: unknown[]; next?: string | null } = await request('GET', `${jobPath(id)}/events${query({ after })}`);
    for (const e of r.events ?? []) {
      const ev = normalizeEvent(e);
      if (ev) all.push(ev);
    }
    if (!r.next) return all;
    after = r.next;
  }
}

export function retryJob(id: string): Promise<Job> {
  return request('POST', `${jobPath(id)}/retry`);
}

export function cancelJob(id: string): Promise<Job> {
  return request('POST', `${jobPath(id)}/cancel`);
}

export function enqueueJob(input: EnqueueInput): Promise<Job> {
  return request('POST', '/api/jobs', { body: input });
}

/** Changes a queue's settings (admin): absent keys stay, null clears a limit. */
export function patchQueue(queue: string, patch: QueueSettingsPatch): Promise<QueueCounts> {
  return request('PATCH', `/api/queues/${encodeURIComponent(queue)}`, { body: patch });
}

export async function listSchedules(): Promise<Schedule[]> {
  return (await request<{ schedules: Schedule[] }>('GET', '/api/schedules')).schedules ?? [];
}

interface ScheduleInput {
  cron: string;
  timezone?: string;
  job: Record<string, unknown>;
  paused?: boolean;
}

export function putSchedule(name: string, input: ScheduleInput): Promise<Schedule> {
  return request('PUT', `/api/schedules/${encodeURIComponent(name)}`, { body: input });
}

export function deleteSchedule(name: string): Promise<null> {
  return request('DELETE', `/api/schedules/${encodeURIComponent(name)}`);
}

export function runSchedule(name: string): Promise<Job> {
  return request('POST', `/api/schedules/${encodeURIComponent(name)}/run`);
}

export async function listWorkers(): Promise<WorkerInfo[]> {
  const r = await request<{ workers: WorkerInfo[] }>('GET', '/api/workers');
  return r.workers ?? [];
}

/** The health report; a 503 (database unreachable) still carries one. Missing fields read as down. */
export async function getHealth(): Promise<Health> {
  const b = (await request<Partial<Health> | null>('GET', '/api/health', { accept: [503] })) ?? {};
  return {
    ok: b.ok === true,
    db: b.db ?? (b.ok ? 'up' : 'down'),
    listener: b.listener ?? 'down',
    streamLagMs: b.streamLagMs ?? null,
    streamHeldBy: b.streamHeldBy ?? null,
    tables: Array.isArray(b.tables) ? b.tables : [],
  };
}

// A typed client for Herald's HTTP API (README, "HTTP API"), for producers and tools written in
// TypeScript. Uses fetch; the event stream (stream.ts) is an async iterator that resumes by
// itself with Last-Event-ID after a dropped connection, so a consumer sees every event exactly once.
import { context, propagation } from '@opentelemetry/api';
import type { Job } from '../queue/job.ts';
import type {
  Actor, EnqueueInput as CoreEnqueueInput, JobPage, QueueInfo, QueueSettingsPatch, Schedule, ScheduleInput, Step, WorkerInfo,
} from '../queue/queue.ts';
import type { HistoryBucket, HistoryRange } from '../queue/history.ts';
import type { EventType, JobStatus } from '../queue/schema/index.ts';
import type { BulkAction } from '../queue/defaults.ts';
import type { JobFilter } from '../queue/search.ts';
import type { ErrorCode } from '../queue/errors.ts';
import { apiError, EventStream, HeraldApiError, type ApiJobEvent, type StreamOptions } from './stream.ts';
import type { Health } from '../server/routes/health.schema.ts';
import type { Alert } from '../queue/alerts.ts';
import { tracing } from '../queue/tracing.ts';
import type { FlowDetail, FlowInfo, FlowStatus, Parent } from '../queue/services/flows.ts';

// The API's shapes are declared once, here and in the core; the board imports them as types.
export type { Job, JobStatus, EventType, JobPage, JobFilter, HistoryBucket, HistoryRange, BulkAction };
export type { Actor, QueueInfo, QueueSettingsPatch, Schedule, ScheduleInput, WorkerInfo, Health, ErrorCode, Alert };
export type { FlowDetail, FlowInfo, FlowStatus, Step };
export { EventStream, HeraldApiError };
export type { ApiJobEvent, StreamEvent, StreamOptions } from './stream.ts';
/** One job of POST /api/flows: an enqueue body with its ref and the refs it waits for. */
export type FlowJobInput = Omit<EnqueueInput, 'dependsOn'> & { ref: string; dependsOn?: string[] };
/** A parent or child on a job's page (GET /api/jobs/:id/dependencies). */
export type Relative = Omit<Parent, 'result'>;
/** Job counts and settings of one queue, and who last changed them (GET /api/queues). */
export type QueueCounts = QueueInfo;

/** A page of GET /api/jobs/:id/events: `next` is the `after` of the following page, null on the last. */
export interface JobEventPage {
  events: ApiJobEvent[];
  next: string | null;
}

/** One job to add: the body of POST /api/jobs. `runAt` is ISO 8601 with a time zone, or a Date. */
export type EnqueueInput = Omit<CoreEnqueueInput, 'idempotencyKey'> & { idempotencyKey?: string };

export interface EnqueueOptions {
  /** Sent as the Idempotency-Key header: the same key returns the same job. */
  idempotencyKey?: string;
  /** Wait up to this many ms (≤ 60000) for the job to end. */
  wait?: number;
  signal?: AbortSignal;
}

export interface EnqueueResult {
  job: Job;
  /** False when an idempotency key returned a job made before. */
  created: boolean;
  /** With `wait`: true when the wait ran out before the job ended (HTTP 202). */
  pending: boolean;
}

export interface ListFilter extends JobFilter {
  limit?: number;
  before?: string;
}

export interface BulkRequest {
  action: BulkAction;
  /** Must name a queue or a status. */
  filter: JobFilter;
  dryRun?: boolean;
}

const filterParam = (k: string, v: unknown) =>
  k === 'payload' && typeof v !== 'string' ? JSON.stringify(v) : v instanceof Date ? v.toISOString() : String(v);

export interface HeraldClientOptions {
  /** e.g. http://127.0.0.1:3000; '' in a browser page served by Herald (same origin). */
  baseUrl: string;
  /**
   * A token from HERALD_TOKENS, sent as Authorization: Bearer. A function is asked before every
   * call, for a token that changes while the client lives (a page where the user types it).
   */
  token?: string | null | (() => string | null | undefined);
  fetch?: typeof fetch;
  /** Called with every error reply before it is thrown (a page opens its token prompt on a 401). */
  onError?: (error: HeraldApiError) => void;
}

/** Per call: a signal that aborts the request (the fetch rejects with an AbortError). */
export interface CallOptions {
  signal?: AbortSignal;
}

export class HeraldClient {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;

  constructor(private readonly opts: HeraldClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const token = typeof this.opts.token === 'function' ? this.opts.token() : this.opts.token;
    const headers = { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
    // With an OpenTelemetry SDK, the caller's context goes along (traceparent): the server's
    // request span, and so the job's send span, continue the caller's trace.
    if (tracing()) propagation.inject(context.active(), headers);
    return headers;
  }

  private async fail(res: Response): Promise<HeraldApiError> {
    const err = await apiError(res);
    this.opts.onError?.(err);
    return err;
  }

  private async call<T>(method: string, path: string, body?: unknown, init: { headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<{ status: number; headers: Headers; body: T }> {
    const res = await this.fetch(`${this.baseUrl}${path}`, {
      method,
      headers: this.headers({ ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers }),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: init.signal,
    });
    if (!res.ok) throw await this.fail(res);
    // 204 (a delete) has no body.
    const reply: unknown = res.status === 204 ? undefined : await res.json();
    return { status: res.status, headers: res.headers, body: reply as T };
  }

  /** Adds a job. 409 (a reused key with a different job) and 4xx throw HeraldApiError. */
  async enqueue(input: EnqueueInput, opts: EnqueueOptions = {}): Promise<EnqueueResult> {
    const body = { ...input, runAt: input.runAt instanceof Date ? input.runAt.toISOString() : input.runAt };
    const query = opts.wait !== undefined ? `?wait=${opts.wait}` : '';
    const headers = opts.idempotencyKey !== undefined ? { 'idempotency-key': opts.idempotencyKey } : undefined;
    const res = await this.call<Job>('POST', `/api/jobs${query}`, body, { headers, signal: opts.signal });
    const createdHeader = res.headers.get('herald-job-created');
    return { job: res.body, created: createdHeader ? createdHeader === 'true' : res.status === 201, pending: res.status === 202 };
  }

  /** Adds up to 1000 jobs, all or nothing; returns them in order. */
  async enqueueBatch(jobs: EnqueueInput[], opts: CallOptions = {}): Promise<Job[]> {
    const body = { jobs: jobs.map((j) => ({ ...j, runAt: j.runAt instanceof Date ? j.runAt.toISOString() : j.runAt })) };
    return (await this.call<{ jobs: Job[] }>('POST', '/api/jobs/batch', body, opts)).body.jobs;
  }

  async get(id: string, opts: CallOptions = {}): Promise<Job> {
    return (await this.call<Job>('GET', `/api/jobs/${encodeURIComponent(id)}`, undefined, opts)).body;
  }

  /**
   * Newest first; pass `next` back as `before` for the next page. A search (payload, error,
   * time range) looks at 100,000 jobs per page: `searched` is set when that cut a page short.
   */
  async list(filter: ListFilter = {}, opts: CallOptions = {}): Promise<JobPage> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filter)) if (v !== undefined) q.set(k, filterParam(k, v));
    const qs = q.toString();
    return (await this.call<JobPage>('GET', `/api/jobs${qs ? `?${qs}` : ''}`, undefined, opts)).body;
  }

  /** Retries, cancels, deletes or redrives every job the filter matches (admin). A dry run's `affected` is what the action would change now. */
  async bulk(req: BulkRequest, opts: CallOptions = {}): Promise<{ matched: number; affected: number }> {
    const filter = Object.fromEntries(Object.entries(req.filter).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v]));
    return (await this.call<{ matched: number; affected: number }>('POST', '/api/jobs/bulk', { ...req, filter }, opts)).body;
  }

  /** A queue's history: 1h in 1-minute buckets, 24h in 15-minute ones, 7d in hours. */
  async queueStats(queue: string, range: HistoryRange = '1h', opts: CallOptions = {}): Promise<HistoryBucket[]> {
    const path = `/api/queues/${encodeURIComponent(queue)}/stats?range=${range}`;
    return (await this.call<{ buckets: HistoryBucket[] }>('GET', path, undefined, opts)).body.buckets;
  }

  /** A page of a job's events, oldest first (up to 1000): pass `next` back as `after`; null on the last page. */
  async jobEventPage(id: string, page: { after?: string; limit?: number } = {}, opts: CallOptions = {}): Promise<JobEventPage> {
    const q = new URLSearchParams();
    if (page.after !== undefined) q.set('after', page.after);
    if (page.limit !== undefined) q.set('limit', String(page.limit));
    const qs = q.toString();
    return (await this.call<JobEventPage>('GET', `/api/jobs/${encodeURIComponent(id)}/events${qs ? `?${qs}` : ''}`, undefined, opts)).body;
  }

  /** The newest events the stream has published (up to `limit`, of one `queue` if given), newest first. */
  async recentEvents(filter: { limit?: number; queue?: string } = {}, opts: CallOptions = {}): Promise<ApiJobEvent[]> {
    const q = new URLSearchParams();
    if (filter.limit !== undefined) q.set('limit', String(filter.limit));
    if (filter.queue !== undefined) q.set('queue', filter.queue);
    const qs = q.toString();
    return (await this.call<{ events: ApiJobEvent[] }>('GET', `/api/events/recent${qs ? `?${qs}` : ''}`, undefined, opts)).body.events;
  }

  /** All of a job's events, oldest first (page by page). */
  async jobEvents(id: string, opts: CallOptions = {}): Promise<ApiJobEvent[]> {
    const all: ApiJobEvent[] = [];
    for (let after: string | null | undefined; after !== null; ) {
      const page = await this.jobEventPage(id, after === undefined ? {} : { after }, opts);
      all.push(...page.events);
      after = page.next;
    }
    return all;
  }

  async cancel(id: string, opts: CallOptions = {}): Promise<Job> {
    return (await this.call<Job>('POST', `/api/jobs/${encodeURIComponent(id)}/cancel`, undefined, opts)).body;
  }

  /**
   * Sends signal `name` to a job (producer): its handler's ctx.waitFor(name) returns `payload`. Kept
   * until the job waits for it; `woken` says it was waiting and resumes now. A second signal of the
   * name, or a job that has ended: HeraldApiError 409 HERALD_SIGNAL_SENT.
   */
  async signal(jobId: string, name: string, payload?: unknown, opts: CallOptions = {}): Promise<{ jobId: string; name: string; woken: boolean }> {
    const path = `/api/jobs/${encodeURIComponent(jobId)}/signals/${encodeURIComponent(name)}`;
    return (await this.call<{ jobId: string; name: string; woken: boolean }>('POST', path, payload === undefined ? {} : { payload }, opts)).body;
  }

  /** A durable job's stored steps, in the order they finished. */
  async steps(jobId: string, opts: CallOptions = {}): Promise<Step[]> {
    return (await this.call<{ steps: Step[] }>('GET', `/api/jobs/${encodeURIComponent(jobId)}/steps`, undefined, opts)).body.steps;
  }

  async retry(id: string, opts: CallOptions = {}): Promise<Job> {
    return (await this.call<Job>('POST', `/api/jobs/${encodeURIComponent(id)}/retry`, undefined, opts)).body;
  }

  /**
   * Makes a queued job that waits out its backoff or its runAt due now (admin). Any other job:
   * HeraldApiError 409 HERALD_JOB_NOT_SCHEDULED, and nothing changes.
   */
  async runNow(id: string, opts: CallOptions = {}): Promise<Job> {
    return (await this.call<Job>('POST', `/api/jobs/${encodeURIComponent(id)}/run-now`, undefined, opts)).body;
  }

  async queues(opts: CallOptions = {}): Promise<QueueCounts[]> {
    return (await this.call<{ queues: QueueCounts[] }>('GET', '/api/queues', undefined, opts)).body.queues;
  }

  /**
   * Pause or resume a queue, or set/clear its limits (admin). Absent keys stay; null clears a limit.
   * The reply's updatedBy names this client's token (its role and label).
   */
  async patchQueue(queue: string, patch: QueueSettingsPatch, opts: CallOptions = {}): Promise<QueueInfo> {
    return (await this.call<QueueInfo>('PATCH', `/api/queues/${encodeURIComponent(queue)}`, patch, opts)).body;
  }

  /** Every live worker, idle ones too. */
  async workers(opts: CallOptions = {}): Promise<WorkerInfo[]> {
    return (await this.call<{ workers: WorkerInfo[] }>('GET', '/api/workers', undefined, opts)).body.workers;
  }

  async schedules(opts: CallOptions = {}): Promise<Schedule[]> {
    return (await this.call<{ schedules: Schedule[] }>('GET', '/api/schedules', undefined, opts)).body.schedules;
  }

  /** Creates or replaces a schedule (admin); `created` says which. */
  async putSchedule(name: string, input: ScheduleInput, opts: CallOptions = {}): Promise<{ schedule: Schedule; created: boolean }> {
    const res = await this.call<Schedule>('PUT', `/api/schedules/${encodeURIComponent(name)}`, input, opts);
    return { schedule: res.body, created: res.status === 201 };
  }

  async deleteSchedule(name: string, opts: CallOptions = {}): Promise<void> {
    await this.call<unknown>('DELETE', `/api/schedules/${encodeURIComponent(name)}`, undefined, opts);
  }

  /** Makes the schedule's job now (admin). */
  async runSchedule(name: string, opts: CallOptions = {}): Promise<Job> {
    return (await this.call<Job>('POST', `/api/schedules/${encodeURIComponent(name)}/run`, undefined, opts)).body;
  }

  /** The alert conditions that hold now, as the server sees them (GET /api/alerts). */
  async alerts(opts: CallOptions = {}): Promise<Alert[]> {
    return (await this.call<{ alerts: Alert[] }>('GET', '/api/alerts', undefined, opts)).body.alerts;
  }

  /** Creates a flow (up to 1,000 jobs with refs and dependsOn); jobs come back in request order. */
  async createFlow(jobs: FlowJobInput[], name?: string, opts: CallOptions = {}): Promise<{ flow: FlowInfo; jobs: Job[] }> {
    return (await this.call<{ flow: FlowInfo; jobs: Job[] }>('POST', '/api/flows', { jobs, ...(name ? { name } : {}) }, opts)).body;
  }

  async flows(q: { status?: FlowStatus; before?: string; limit?: number } = {}, opts: CallOptions = {}): Promise<{ flows: FlowInfo[]; next: string | null }> {
    const qs = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)])).toString();
    return (await this.call<{ flows: FlowInfo[]; next: string | null }>('GET', `/api/flows${qs ? `?${qs}` : ''}`, undefined, opts)).body;
  }

  async flow(id: string, opts: CallOptions = {}): Promise<FlowDetail> {
    return (await this.call<FlowDetail>('GET', `/api/flows/${encodeURIComponent(id)}`, undefined, opts)).body;
  }

  /** Cancels (admin) every unfinished job of the flow, or retries its failed and cancelled ones; returns how many changed. */
  async flowAction(id: string, action: 'cancel' | 'retry', opts: CallOptions = {}): Promise<number> {
    return (await this.call<{ affected: number }>('POST', `/api/flows/${encodeURIComponent(id)}/${action}`, undefined, opts)).body.affected;
  }

  /** A job's parents (dependsOn order) and children. */
  async dependencies(id: string, opts: CallOptions = {}): Promise<{ parents: Relative[]; children: Relative[] }> {
    return (await this.call<{ parents: Relative[]; children: Relative[] }>('GET', `/api/jobs/${encodeURIComponent(id)}/dependencies`, undefined, opts)).body;
  }

  /** The health report; a 503 (database unreachable) still carries one. */
  async health(opts: CallOptions = {}): Promise<Health> {
    const res = await this.fetch(`${this.baseUrl}/api/health`, { headers: this.headers(), signal: opts.signal });
    if (res.status !== 200 && res.status !== 503) throw await this.fail(res);
    return (await res.json()) as Health;
  }

  /**
   * The event stream. Iterate it with `for await`; breaking out (or `close()`, or the signal)
   * ends it. A dropped connection is resumed with the last id seen, so nothing is lost or
   * repeated. 4xx replies (bad token, bad cursor) throw HeraldApiError; others are retried.
   */
  events(opts: StreamOptions = {}): EventStream {
    return new EventStream(this.fetch, this.baseUrl, this.headers({ accept: 'text/event-stream' }), opts);
  }
}

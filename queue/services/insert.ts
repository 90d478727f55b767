// Inserting jobs, as producers and schedules both do: the input as a row, and the insert that
// returns each input's job, with the idempotency-key look-ups, in input order.
import { ConflictError, ValidationError } from '../errors.ts';
import { DEFAULTS } from '../defaults.ts';
import { toJob, type Job, type OnParentFailure } from '../job.ts';
import { enqueueJobs, jobsByIdempotencyKey, type EnqueueRecord } from '../sql/enqueue.ts';
import type { Executor } from '../sql/statement.ts';
import type { Db } from './db.ts';

export interface EnqueueInput {
  kind: string;
  queue?: string;
  payload?: unknown;
  priority?: number;
  runAt?: string | Date;
  maxAttempts?: number;
  requires?: string[];
  idempotencyKey?: string | null;
  /** The key of per-group limits (a tenant, a customer). */
  group?: string | null;
  /** Labels to filter by (at most 16). */
  tags?: string[];
  /** An attempt running longer than this fails (1 to 86400000). */
  timeoutMs?: number | null;
  /** A job still queued at this time never starts: it becomes cancelled (event 'expired'). */
  expireAt?: string | Date | null;
  /** Existing job ids it waits for (it is blocked until they end; see services/flows.ts). */
  dependsOn?: string[];
  /** What a parent's failure does: 'cancel' (default) or 'run'. */
  onParentFailure?: OnParentFailure;
}

export interface Enqueued {
  job: Job;
  /** False when an idempotency key returned the job it made before. */
  created: boolean;
}

// Key order does not matter for "the same payload".
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

/** An optional time as ISO, or a ValidationError naming the field. */
function isoOrNull(field: string, v: string | Date | null | undefined): string | null {
  if (v === undefined || v === null) return null;
  const d = v instanceof Date ? v : new Date(v);
  if (Number.isNaN(d.getTime())) throw new ValidationError(`${field} "${String(v)}" is not a valid ISO date`);
  return d.toISOString();
}

export function toRecord(input: EnqueueInput): EnqueueRecord {
  return {
    kind: input.kind,
    queue: input.queue ?? DEFAULTS.queue,
    payload: input.payload === undefined ? {} : input.payload,
    priority: input.priority ?? DEFAULTS.priority,
    run_at: isoOrNull('runAt', input.runAt),
    max_attempts: input.maxAttempts ?? DEFAULTS.maxAttempts,
    requires: input.requires ?? [],
    idempotency_key: input.idempotencyKey ?? null,
    group: input.group ?? null,
    tags: input.tags ?? [],
    timeout_ms: input.timeoutMs ?? null,
    expire_at: isoOrNull('expireAt', input.expireAt),
    trace: null,
  };
}

/**
 * One INSERT of `records` on `ex` (the pool, or a transaction's client). A record whose key
 * made a job before (or earlier in this batch) gets that job back, or a ConflictError when it
 * asks for a different one.
 */
export async function insertJobs(db: Db, ex: Executor, records: EnqueueRecord[]): Promise<(Enqueued | ConflictError)[]> {
  const { rows } = await db.run(enqueueJobs, [JSON.stringify(records)], ex);
  rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
  // Inserted rows follow input order; an input whose key already existed (before, or
  // earlier in this batch) has no row and is looked up instead.
  const out: (Enqueued | undefined)[] = [];
  const seen = new Set<string>();
  const missing: string[] = [];
  let next = 0;
  for (const r of records) {
    const key = r.idempotency_key;
    if (key !== null && seen.has(key)) {
      out.push(undefined);
      continue;
    }
    if (key !== null) seen.add(key);
    const row = rows[next];
    if (row && row.idempotency_key === key) {
      out.push({ job: toJob(row), created: true });
      next++;
    } else {
      out.push(undefined);
      missing.push(key!);
    }
  }
  const existing = new Map<string, Job>();
  const batchCreated = new Map(out.filter((e): e is Enqueued => !!e).map((e) => [e.job.idempotencyKey, e.job]));
  if (missing.length) {
    const found = await db.run(jobsByIdempotencyKey, [missing], ex);
    for (const row of found.rows) existing.set(row.idempotency_key, toJob(row));
  }
  return records.map((r, i) => {
    if (out[i]) return out[i];
    const key = r.idempotency_key!;
    const job = existing.get(key) ?? batchCreated.get(key);
    if (!job) return new ConflictError(`idempotency key "${key}" is being used by a job that vanished; try again`, 'HERALD_CONFLICT_IDEMPOTENCY');
    if (job.kind !== r.kind || job.queue !== r.queue || canonical(job.payload) !== canonical(r.payload)) {
      return new ConflictError(
        `idempotency key "${key}" already made job ${job.id} with a different kind, queue or payload; use a new key for a different job`,
          'HERALD_CONFLICT_IDEMPOTENCY',
      );
    }
    return { job, created: false };
  });
}

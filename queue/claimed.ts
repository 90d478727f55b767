// A job as a worker claims it to run it. The worker itself reads a few fields per job; the whole
// Job (the handler's ctx.job) is built only when a handler reads it. The claim returns its row
// as an array, with timestamps and text arrays left as Postgres wrote them, so a no-op job pays
// neither a per-column object key nor a date parse.
import pg from 'pg';
import { toJob, type Job, type OnParentFailure } from './job.ts';
import type { JobRow } from './sql/rows.ts';

/**
 * What a worker claim returns, in this order (AT gives each position). Not returned: status, locked_by
 * and progress, which the claim itself sets (running, the worker, NULL), and the columns Job hides.
 */
const COLUMNS = [
  'id', 'queue', 'kind', 'payload', 'priority', 'attempt', 'max_attempts', 'timeout_ms', 'expire_at', 'trace',
  'on_parent_failure', 'flow_id', 'available_at', 'created_at', 'started_at', 'finished_at', 'lease_expires_at',
  'requires', 'idempotency_key', 'result', 'last_error', 'cancel_requested_at', 'group', 'tags', 'dead_letter_of', 'ref',
] as const;

/** The RETURNING list of a worker's claim (table alias j). */
export const CLAIMED_RETURNING = COLUMNS.map((c) => `j."${c}"`).join(', ');

/** A worker claim's row: timestamptz and text[] columns unparsed (text), the rest as node-postgres parses them. */
export type ClaimedRow = unknown[];

/** Each column's position in a claimed row. */
const AT = Object.fromEntries(COLUMNS.map((c, i) => [c, i])) as Record<(typeof COLUMNS)[number], number>;
const DATES = ['available_at', 'created_at', 'started_at', 'finished_at', 'lease_expires_at', 'cancel_requested_at', 'expire_at'] as const;
const TEXT_ARRAYS = ['requires', 'tags'] as const;

const TIMESTAMPTZ = 1184;
const TEXT_ARRAY = 1009;
const raw = (s: string) => s;
const parserOf = pg.types.getTypeParser as (oid: number, format?: 'text' | 'binary') => (s: string) => unknown;
/** The claim's parsers: those two types stay text until the whole Job is built. */
export const CLAIMED_PARSERS: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === TIMESTAMPTZ || oid === TEXT_ARRAY ? raw : parserOf(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

const parseDate = parserOf(TIMESTAMPTZ) as (s: string) => Date;
const parseTextArray = parserOf(TEXT_ARRAY) as (s: string) => string[];

export class ClaimedJob {
  readonly id: string;
  readonly queue: string;
  readonly kind: string;
  readonly payload: unknown;
  readonly priority: number;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly timeoutMs: number | null;
  /** expireAt in ms since the epoch, or null. */
  readonly expireAtMs: number | null;
  readonly trace: string | null;
  readonly onParentFailure: OnParentFailure | null;
  readonly flowId: string | null;
  private whole?: Job;

  constructor(
    private readonly row: ClaimedRow,
    /** Who claimed it: the claim set locked_by to this. */
    private readonly worker: string,
  ) {
    this.id = row[AT.id] as string;
    this.queue = row[AT.queue] as string;
    this.kind = row[AT.kind] as string;
    this.payload = row[AT.payload];
    this.priority = row[AT.priority] as number;
    this.attempt = row[AT.attempt] as number;
    this.maxAttempts = row[AT.max_attempts] as number;
    this.timeoutMs = row[AT.timeout_ms] as number | null;
    this.expireAtMs = row[AT.expire_at] === null ? null : parseDate(row[AT.expire_at] as string).getTime();
    this.trace = row[AT.trace] as string | null;
    this.onParentFailure = row[AT.on_parent_failure] as OnParentFailure | null;
    this.flowId = row[AT.flow_id] as string | null;
  }

  /** The whole Job: the claimed row parsed as a full one would be, through toJob (built once, on first read). */
  get job(): Job {
    if (this.whole) return this.whole;
    const r: Record<string, unknown> = Object.fromEntries(COLUMNS.map((c, i) => [c, this.row[i]]));
    for (const c of DATES) if (r[c] !== null) r[c] = parseDate(r[c] as string);
    for (const c of TEXT_ARRAYS) r[c] = parseTextArray(r[c] as string);
    // What the claim set and did not return.
    Object.assign(r, { status: 'running', locked_by: this.worker, progress: null });
    return (this.whole = toJob(r as JobRow));
  }
}

// Errors the core throws on purpose, and the code table every error reply of the HTTP API draws
// from. A code is stable: clients switch on it, while the message may be reworded. The
// "Error codes" table of docs/api.md lists the same codes (a test compares them).
import { FLOW_NAME_RULE, MAX_ATTEMPTS_LIMIT, MAX_REQUIRES, MAX_TAGS, MAX_TIMEOUT_MS, NAME_RULE, QUEUE_LIMITS } from './defaults.ts';

/** Every error code, with the HTTP status it is sent with and what it means. */
export const ERROR_CODES = {
  HERALD_VALIDATION: { status: 400, meaning: 'a field breaks the schema or a limit; the message names the field and the rule' },
  HERALD_INVALID_JSON: { status: 400, meaning: 'the body is not valid JSON, or is empty while declared JSON' },
  HERALD_INVALID_CURSOR: { status: 400, meaning: 'Last-Event-ID is not a cursor this server issued: reconnect without it, or with 0' },
  HERALD_BAD_REQUEST: { status: 400, meaning: 'another malformed request (a bad URL encoding, a wrong content-length)' },
  HERALD_UNAUTHORIZED: { status: 401, meaning: 'no token, or one that is not in HERALD_TOKENS' },
  HERALD_FORBIDDEN: { status: 403, meaning: "the token's role is below the one the route needs" },
  HERALD_AUTH_REQUIRED: { status: 403, meaning: 'with auth off, a request that came through a proxy (Forwarded, X-Forwarded-For, X-Real-IP or Via): set HERALD_TOKENS' },
  HERALD_CROSS_SITE: { status: 403, meaning: 'with auth off, a page of another site (a non-loopback Origin) may not change anything' },
  HERALD_NOT_FOUND: { status: 404, meaning: 'the job, schedule or flow does not exist' },
  HERALD_ROUTE_NOT_FOUND: { status: 404, meaning: 'no route has this method and path' },
  HERALD_NOT_ACCEPTABLE: { status: 406, meaning: 'the event stream was asked for with an Accept header that refuses text/event-stream' },
  HERALD_CONFLICT_IDEMPOTENCY: { status: 409, meaning: 'the idempotency key was used for a different job (kind, queue or payload)' },
  HERALD_JOB_NOT_CANCELLABLE: { status: 409, meaning: 'the job has already finished' },
  HERALD_JOB_NOT_RETRYABLE: { status: 409, meaning: 'the job is not failed or cancelled, or has used the most attempts a job may have' },
  HERALD_JOB_NOT_SCHEDULED: { status: 409, meaning: 'run now: the job is not queued waiting out a backoff or its runAt (it is due already, running, finished, blocked, or in a durable sleep or wait)' },
  HERALD_SIGNAL_SENT: { status: 409, meaning: 'the job already holds a signal of that name (or its wait for it timed out), or has ended' },
  HERALD_MISDIRECTED: { status: 421, meaning: 'with auth off, the server answers only to a loopback Host (DNS rebinding guard)' },
  HERALD_BODY_TOO_LARGE: { status: 413, meaning: 'the body is over 1 MiB' },
  HERALD_UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'the body is not sent as application/json' },
  HERALD_INTERNAL: { status: 500, meaning: 'a fault in the server; its log has the details under the request id' },
  HERALD_TOO_MANY_STREAMS: { status: 503, meaning: 'the server has HERALD_MAX_STREAMS event streams open; try again after Retry-After seconds' },
  HERALD_DATABASE_UNAVAILABLE: { status: 503, meaning: 'the database is unreachable; try again shortly' },
} as const satisfies Record<`HERALD_${string}`, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class HeraldError extends Error {
  readonly statusCode: number;

  constructor(
    message: string,
    readonly code: ErrorCode = 'HERALD_INTERNAL',
  ) {
    super(message);
    this.statusCode = ERROR_CODES[code].status;
  }
}

/** Bad input: nothing was written. */
export class ValidationError extends HeraldError {
  override name = 'ValidationError';
  constructor(message: string, code: ErrorCode = 'HERALD_VALIDATION') {
    super(message, code);
  }
}

export class NotFoundError extends HeraldError {
  override name = 'NotFoundError';
  constructor(message: string, code: ErrorCode = 'HERALD_NOT_FOUND') {
    super(message, code);
  }
}

/**
 * The request fits the schema but not the job's state, or an idempotency key was reused
 * differently. Each conflict has its own code: a client's next step differs for each.
 */
export class ConflictError extends HeraldError {
  override name = 'ConflictError';
  constructor(message: string, code: 'HERALD_CONFLICT_IDEMPOTENCY' | 'HERALD_JOB_NOT_CANCELLABLE' | 'HERALD_JOB_NOT_RETRYABLE' | 'HERALD_JOB_NOT_SCHEDULED' | 'HERALD_SIGNAL_SENT') {
    super(message, code);
  }
}

const { concurrency, rateCount, ratePeriodMs } = QUEUE_LIMITS;

// Messages for the database's own checks, so a rejected row reads like a rejected request.
const CONSTRAINT_MESSAGES: Record<string, string> = {
  jobs_queue_name: `queue must be ${NAME_RULE}`,
  jobs_kind_name: `kind must be ${NAME_RULE}`,
  jobs_max_attempts_range: `maxAttempts must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT}`,
  jobs_attempt_range: 'attempt may not exceed maxAttempts',
  jobs_requires_count: `requires may hold at most ${MAX_REQUIRES} tags`,
  jobs_group_name: `group must be ${NAME_RULE}`,
  jobs_tags_names: `tags: at most ${MAX_TAGS}, each ${NAME_RULE}`,
  jobs_timeout_range: `timeoutMs must be an integer from 1 to ${MAX_TIMEOUT_MS}`,
  queues_queue_name: `queue must be ${NAME_RULE}`,
  queues_concurrency_range: `concurrency must be an integer from ${concurrency.min} to ${concurrency.max}, or null`,
  queues_group_concurrency_range: `groupConcurrency must be an integer from ${concurrency.min} to ${concurrency.max}, or null`,
  queues_rate_count_range: `rateLimit.count must be an integer from ${rateCount.min} to ${rateCount.max}`,
  queues_rate_period_range: `rateLimit.periodMs must be an integer from ${ratePeriodMs.min} to ${ratePeriodMs.max}`,
  // The table's check also refuses the queue itself; patchQueue says that one in its own words first.
  queues_dead_letter_name: `deadLetter must be ${NAME_RULE}, or null`,
  queues_rate_both: 'rateLimit needs both count and periodMs',
  jobs_idempotency_key_length: 'idempotencyKey must be 1-255 characters',
  jobs_progress_shape: 'progress percent must be a number from 0 to 100',
  jobs_ref_name: 'ref must be 1-128 characters of [A-Za-z0-9_.:-]',
  jobs_on_parent_failure: 'onParentFailure must be "cancel" or "run"',
  flows_name: `name must be ${FLOW_NAME_RULE}`,
};

/** Turns a PostgreSQL input error into a ValidationError; anything else passes through. */
export function fromPgError(err: unknown): unknown {
  const e = err as { code?: string; constraint?: string; message?: string };
  if (!e || typeof e.code !== 'string') return err;
  if (e.code === '23514' && e.constraint) {
    return new ValidationError(CONSTRAINT_MESSAGES[e.constraint] ?? `rejected by check ${e.constraint}`);
  }
  if (e.code === '22003') return new ValidationError(`number out of range: ${e.message}`);
  if (['22P02', '22P05', '22021', '22007', '22008', '22023', '22004', '23502'].includes(e.code)) {
    return new ValidationError(`invalid value: ${e.message}`);
  }
  return err;
}

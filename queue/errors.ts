// Errors the core throws on purpose. The server maps each to its HTTP status.
import { MAX_ATTEMPTS_LIMIT } from './defaults.ts';

export class HeraldError extends Error {
  readonly statusCode: number = 500;
}

/** Bad input: nothing was written. */
export class ValidationError extends HeraldError {
  override readonly statusCode = 400;
  override name = 'ValidationError';
}

export class NotFoundError extends HeraldError {
  override readonly statusCode = 404;
  override name = 'NotFoundError';
}

/** The request fits the schema but not the job's state, or an idempotency key was reused differently. */
export class ConflictError extends HeraldError {
  override readonly statusCode = 409;
  override name = 'ConflictError';
}

// Messages for the database's own checks, so a rejected row reads like a rejected request.
const CONSTRAINT_MESSAGES: Record<string, string> = {
  jobs_queue_name: 'queue must be 1-128 characters of [A-Za-z0-9_.:-]',
  jobs_kind_name: 'kind must be 1-128 characters of [A-Za-z0-9_.:-]',
  jobs_max_attempts_range: `maxAttempts must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT}`,
  jobs_attempt_range: 'attempt may not exceed maxAttempts',
  jobs_requires_count: 'requires may hold at most 32 tags',
  jobs_group_name: 'group must be 1-128 characters of [A-Za-z0-9_.:-]',
  jobs_tags_names: 'tags: at most 16, each 1-128 characters of [A-Za-z0-9_.:-]',
  jobs_timeout_range: 'timeoutMs must be an integer from 1 to 86400000',
  queues_queue_name: 'queue must be 1-128 characters of [A-Za-z0-9_.:-]',
  queues_concurrency_range: 'concurrency must be an integer from 1 to 10000, or null',
  queues_group_concurrency_range: 'groupConcurrency must be an integer from 1 to 10000, or null',
  queues_rate_count_range: 'rateLimit.count must be an integer from 1 to 100000',
  queues_rate_period_range: 'rateLimit.periodMs must be an integer from 100 to 86400000',
  queues_rate_both: 'rateLimit needs both count and periodMs',
  jobs_idempotency_key_length: 'idempotencyKey must be 1-255 characters',
  jobs_progress_shape: 'progress percent must be a number from 0 to 100',
  jobs_ref_name: 'ref must be 1-128 characters of [A-Za-z0-9_.:-]',
  jobs_on_parent_failure: 'onParentFailure must be "cancel" or "run"',
  flows_name: 'name must be 1-128 characters of [A-Za-z0-9_.:-]',
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

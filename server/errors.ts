// One error shape for every reply, Fastify's {statusCode, error, message}, with a message a
// person can act on. 4xx for what the caller can fix; 503 while the database is unreachable;
// 500 only for real faults, logged with the request id and never with the stack in the reply.
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance } from 'fastify';
import { HeraldError } from '../queue/errors.ts';
import { MAX_ATTEMPTS_LIMIT, MAX_TAGS, MAX_TIMEOUT_MS, QUEUE_LIMITS } from '../queue/defaults.ts';
import { NAME_RULE } from './schemas.ts';

export const errorBody = (statusCode: number, message: string) => ({
  statusCode,
  error: STATUS_CODES[statusCode] ?? 'Error',
  message,
});

/** An error a route throws on purpose, with its status. */
export class HttpError extends Error {
  constructor(readonly statusCode: number, message: string) {
    super(message);
  }
}

// What each field must be, for messages that say how to fix the request.
const RULES: Record<string, string> = {
  kind: `must be ${NAME_RULE}`,
  queue: `must be ${NAME_RULE}`,
  priority: 'must be an integer from -32768 to 32767',
  maxAttempts: `must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT}`,
  requires: 'must be a list of at most 32 tags, each 1-128 characters',
  runAt: 'must be an ISO 8601 date-time with a time zone, e.g. 2030-01-01T12:00:00Z',
  idempotencyKey: 'must be a string of 1-255 characters',
  group: `must be ${NAME_RULE}`,
  tag: `must be ${NAME_RULE}`,
  tags: `must be a list of at most ${MAX_TAGS} tags, each ${NAME_RULE}`,
  timeoutMs: `must be an integer number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`,
  expireAt: 'must be an ISO 8601 date-time with a time zone, e.g. 2030-01-01T12:00:00Z',
  'idempotency-key': 'must be 1-255 characters',
  'last-event-id': 'must be a cursor this server sent (the `id:` of an event), or 0',
  jobs: 'must be a list of 1 to 1000 jobs',
  limit: 'must be an integer from 1 to 500',
  before: 'must be a job id (digits)',
  id: 'must be a job id (digits)',
  job: 'must be a job id (digits)',
  concurrency: `must be an integer from ${QUEUE_LIMITS.concurrency.min} to ${QUEUE_LIMITS.concurrency.max}, or null to clear it`,
  groupConcurrency: `must be an integer from ${QUEUE_LIMITS.concurrency.min} to ${QUEUE_LIMITS.concurrency.max}, or null to clear it`,
  rateLimit: `must be {count: ${QUEUE_LIMITS.rateCount.min}-${QUEUE_LIMITS.rateCount.max}, periodMs: ${QUEUE_LIMITS.ratePeriodMs.min}-${QUEUE_LIMITS.ratePeriodMs.max}}, or null to clear it`,
  count: `must be an integer from ${QUEUE_LIMITS.rateCount.min} to ${QUEUE_LIMITS.rateCount.max}`,
  periodMs: `must be an integer number of milliseconds from ${QUEUE_LIMITS.ratePeriodMs.min} to ${QUEUE_LIMITS.ratePeriodMs.max}`,
  paused: 'must be true or false',
  cron: 'must be a cron expression: 5 fields (minute hour day month weekday), or 6 with seconds first',
  timezone: 'must be an IANA time zone name, like UTC or Europe/Paris',
  name: `must be ${NAME_RULE}`,
  wait: 'must be a whole number of milliseconds from 0 to 60000',
  status: 'must be one of queued, running, succeeded, failed, cancelled',
  lastEventId: 'must be a cursor this server sent (the `id:` of an event), or 0',
  payload: 'must be JSON, for example {"user":42}',
  error: 'must be 1-1000 characters',
  createdAfter: 'must be an ISO 8601 date-time with a time zone, e.g. 2030-01-01T12:00:00Z',
  createdBefore: 'must be an ISO 8601 date-time with a time zone, e.g. 2030-01-01T12:00:00Z',
  action: 'must be one of retry, cancel, delete',
  filter: 'must be an object of the GET /api/jobs filters (queue, status, kind, payload, error, createdAfter, createdBefore)',
  dryRun: 'must be true or false',
  range: 'must be one of 1h, 24h, 7d',
};

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

const HEADER_NAMES: Record<string, string> = { 'idempotency-key': 'Idempotency-Key', 'last-event-id': 'Last-Event-ID' };

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** "/jobs/3/kind" → "jobs[3].kind"; the field a rule is looked up by is the last name in it. */
function fieldPath(instancePath: string): { path: string; field: string | undefined } {
  const parts = instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let path = '';
  let field: string | undefined;
  for (const p of parts) {
    if (/^\d+$/.test(p)) path += `[${p}]`;
    else {
      path += path ? `.${p}` : p;
      field = p;
    }
  }
  return { path, field };
}

/** Turns Fastify's (Ajv's) first validation error into one readable sentence. */
export function validationMessage(errors: AjvError[], context: string | undefined): string {
  const e = errors[0];
  const part = PART_NAMES[context ?? ''] ?? context ?? 'request';
  const { path, field } = fieldPath(e.instancePath);
  const batchIndex = /^jobs\[(\d+)\]/.exec(path)?.[1];
  const suffix = batchIndex !== undefined ? ` (job ${batchIndex} of the batch; nothing was enqueued)` : '';
  switch (e.keyword) {
    case 'required': {
      const missing = String(e.params.missingProperty);
      const where = path ? `${path}.${missing}` : missing;
      return `${where} is required${suffix}`;
    }
    case 'additionalProperties': {
      const extra = String(e.params.additionalProperty);
      const where = path ? `${path}.${extra}` : extra;
      return `${part} ${part === 'query' ? 'parameter' : 'field'} "${where}" is not allowed${suffix}`;
    }
    case 'minProperties':
      if (!path) return `the ${part} must set at least one field`;
      break;
    case 'type':
      if (!path) return `the ${part} must be ${part === 'body' ? 'a JSON object' : String(e.params.type)}`;
  }
  const rule = field ? RULES[field] : undefined;
  const name = part === 'header' ? `the ${HEADER_NAMES[path] ?? path} header` : path || part;
  return `${name} ${rule ?? e.message ?? 'is invalid'}${suffix}`;
}

// A connection failure, not a bad statement: the database is down or restarting.
function isDatabaseUnavailable(err: { code?: string; message?: string }): boolean {
  const code = err.code ?? '';
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'EPIPE', '57P01', '57P02', '57P03'].includes(code) ||
    code.startsWith('08') ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(err.message ?? '')
  );
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError & { validationContext?: string }, request, reply) => {
    if (err.validation) {
      return reply.code(400).send(errorBody(400, validationMessage(err.validation, err.validationContext)));
    }
    if (err instanceof HeraldError || err instanceof HttpError) {
      return reply.code(err.statusCode).send(errorBody(err.statusCode, err.message));
    }
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      const type = String(request.headers['content-type'] ?? '').slice(0, 100);
      return reply.code(415).send(errorBody(415, `content-type "${type}" is not accepted; send JSON with content-type: application/json`));
    }
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.code(413).send(errorBody(413, 'the request body is larger than 1 MiB; send fewer or smaller jobs per request'));
    }
    if (isDatabaseUnavailable(err)) {
      request.log.warn({ err: err.message }, 'database unavailable');
      return reply.code(503).send(errorBody(503, 'the database is unreachable right now; try again shortly'));
    }
    // Fastify's own 4xx (bad JSON, wrong content type, ...) already say what is wrong.
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status < 500) return reply.code(status).send(errorBody(status, err.message));
    request.log.error({ err }, 'request failed');
    return reply.code(500).send(errorBody(500, `internal server error (request ${request.id}); the server log has the details`));
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody(404, `there is no route ${request.method} ${request.url.split('?')[0]}; see /api/docs`));
  });
}

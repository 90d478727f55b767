// One error shape for every reply, Fastify's {statusCode, error, message}, with a message a
// person can act on, and a stable `code` from the table in queue/errors.ts that clients switch
// on. 4xx for what the caller can fix; 503 while the database is unreachable; 500 only for real
// faults, logged with the request id and never with the stack in the reply.
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_CODES, HeraldError, type ErrorCode } from '../queue/errors.ts';
import { HISTORY_RANGES } from '../queue/history.ts';
import { JOB_STATUSES } from '../queue/schema/jobs.ts';
import { ON_PARENT_FAILURE } from '../queue/job.ts';
import { BULK_ACTIONS, DEFAULTS, FLOW_NAME_RULE, MAX_ATTEMPTS_LIMIT, MAX_DRAINED_BODY, MAX_NAME_LENGTH, MAX_REQUIRES, MAX_TAGS, MAX_TIMEOUT_MS, NAME_RULE, QUEUE_LIMITS } from '../queue/defaults.ts';

/** The reply body of an error: its status comes from the code's row in the table. */
export function errorBody(code: ErrorCode, message: string) {
  const statusCode = ERROR_CODES[code].status;
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message, code };
}

// Fastify's own rejections (and a plugin's) by status, when no more precise code applies.
const CODE_OF_STATUS: Record<number, ErrorCode> = {
  400: 'HERALD_BAD_REQUEST',
  404: 'HERALD_ROUTE_NOT_FOUND',
  406: 'HERALD_NOT_ACCEPTABLE',
  413: 'HERALD_BODY_TOO_LARGE',
  415: 'HERALD_UNSUPPORTED_MEDIA_TYPE',
};
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_EMPTY_JSON_BODY: 'HERALD_INVALID_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'HERALD_INVALID_JSON',
};

// What each field must be, for messages that say how to fix the request.
const RULES: Record<string, string> = {
  kind: `must be ${NAME_RULE}`,
  queue: `must be ${NAME_RULE}`,
  priority: 'must be an integer from -32768 to 32767',
  maxAttempts: `must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT}`,
  requires: `must be a list of at most ${MAX_REQUIRES} tags, each 1-${MAX_NAME_LENGTH} characters`,
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
  limit: `must be an integer from 1 to 500 (to ${DEFAULTS.eventsLimit} for a job's events, ${DEFAULTS.recentEventsMax} for the recent events)`,
  after: 'must be an event id (digits): the `next` of the previous page',
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
  // A name in a body is a flow's (a schedule's is in its path): text a person writes.
  'body.name': `must be ${FLOW_NAME_RULE}`,
  deadLetter: `must be ${NAME_RULE}, or null`,
  wait: 'must be a whole number of milliseconds from 0 to 60000',
  // Built from the lists the schemas accept, so a message cannot leave one out.
  status: `must be one of ${[...JOB_STATUSES, 'scheduled'].join(', ')}`,
  lastEventId: 'must be a cursor this server sent (the `id:` of an event), or 0',
  payload: 'must be JSON, for example {"user":42}',
  error: 'must be 1-1000 characters',
  createdAfter: 'must be an ISO 8601 date-time with a time zone, e.g. 2030-01-01T12:00:00Z',
  createdBefore: 'must be an ISO 8601 date-time with a time zone, e.g. 2030-01-01T12:00:00Z',
  action: `must be one of ${BULK_ACTIONS.join(', ')}`,
  filter: 'must be an object of the GET /api/jobs filters (queue, status, kind, payload, error, createdAfter, createdBefore)',
  dryRun: 'must be true or false',
  dependsOn: 'must be a list of job ids (digits)',
  onParentFailure: `must be one of ${ON_PARENT_FAILURE.join(', ')}`,
  range: `must be one of ${Object.keys(HISTORY_RANGES).join(', ')}`,
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
  const rule = field ? (RULES[`${part}.${field}`] ?? RULES[field]) : undefined;
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

/**
 * Fastify's errors from before routing (Fastify's `frameworkErrors` option): a URL that does not
 * decode, and a path segment longer than any name, which is a name the schema would refuse anyway.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const [code, message]: [ErrorCode, string] =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? ['HERALD_VALIDATION', `a path parameter is longer than ${MAX_NAME_LENGTH} characters: names are ${NAME_RULE}, job ids are digits`]
      : err.code === 'FST_ERR_BAD_URL'
        ? ['HERALD_BAD_REQUEST', 'the URL is not valid: a percent-encoding in its path does not decode']
        : ['HERALD_INTERNAL', `internal server error (request ${request.id}); the server log has the details`];
  if (code === 'HERALD_INTERNAL') request.log.error({ err }, 'request failed before routing');
  void reply.code(ERROR_CODES[code].status).send(errorBody(code, message));
}

/**
 * Reads and drops the rest of a request body, up to `limit` bytes: Fastify refuses a body over
 * its limit as soon as it knows (by content-length, before reading it) and closes the connection
 * after the reply, so a client still writing its body got EPIPE or a reset, not the 413.
 */
function drain(raw: IncomingMessage, limit: number): Promise<void> {
  if (raw.readableEnded || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let read = 0;
    const done = () => {
      raw.off('data', counted).off('end', done).off('close', done).off('error', done);
      resolve();
    };
    const counted = (chunk: Buffer) => {
      read += chunk.length;
      if (read > limit) done();
    };
    raw.on('data', counted).once('end', done).once('close', done).once('error', done);
    raw.resume();
  });
}

const isBareError = (p: unknown): p is { statusCode: number; message: string } =>
  typeof p === 'object' && p !== null && 'statusCode' in p && 'message' in p && !('code' in p);

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler(async (err: FastifyError & { validationContext?: string }, request, reply) => {
    const send = (code: ErrorCode, message: string) => reply.code(ERROR_CODES[code].status).send(errorBody(code, message));
    if (err.validation) return send('HERALD_VALIDATION', validationMessage(err.validation, err.validationContext));
    if (err instanceof HeraldError) return send(err.code, err.message);
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      const type = String(request.headers['content-type'] ?? '').slice(0, 100);
      return send('HERALD_UNSUPPORTED_MEDIA_TYPE', `content-type "${type}" is not accepted; send JSON with content-type: application/json`);
    }
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      request.log.debug({ contentLength: request.headers['content-length'] }, 'reading the rest of a body over the limit before the 413');
      await drain(request.raw, MAX_DRAINED_BODY);
      return send('HERALD_BODY_TOO_LARGE', 'the request body is larger than 1 MiB; send fewer or smaller jobs per request');
    }
    if (isDatabaseUnavailable(err)) {
      request.log.warn({ err: err.message }, 'database unavailable');
      return send('HERALD_DATABASE_UNAVAILABLE', 'the database is unreachable right now; try again shortly');
    }
    // Fastify's own 4xx (bad JSON, a bad URL, ...) already say what is wrong.
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) return send(FASTIFY_CODES[err.code] ?? CODE_OF_STATUS[status] ?? 'HERALD_BAD_REQUEST', err.message);
    request.log.error({ err }, 'request failed');
    return send('HERALD_INTERNAL', `internal server error (request ${request.id}); the server log has the details`);
  });

  // A plugin's own error reply (@fastify/sse's 406) gets a code too: every error body has one.
  app.addHook('preSerialization', (_request, reply, payload: unknown, done) => {
    if (reply.statusCode < 400 || !isBareError(payload)) return done(null, payload);
    done(null, { ...payload, code: CODE_OF_STATUS[reply.statusCode] ?? 'HERALD_BAD_REQUEST' });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(errorBody('HERALD_ROUTE_NOT_FOUND', `there is no route ${request.method} ${request.url.split('?')[0]}; see /api/docs`));
  });
}

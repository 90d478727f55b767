// The JSON Schemas of every route: Fastify validates requests and serialises replies with
// them, and @fastify/swagger turns them into /api/openapi.json. Field limits match the database's
// checks (queue/schema.ts), so a request the schema accepts is one the table stores.
import { EVENT_TYPES, JOB_STATUSES } from '../queue/schema.ts';
import { BULK_ACTIONS } from '../queue/sql/search.ts';
import { HISTORY_RANGES } from '../queue/history.ts';
import { DEFAULTS, MAX_ATTEMPTS_LIMIT, MAX_TAGS, MAX_TIMEOUT_MS, QUEUE_LIMITS } from '../queue/defaults.ts';
import { ON_PARENT_FAILURE, WAITING_REASONS } from '../queue/job.ts';

export const NAME_RULE = '1-128 characters of [A-Za-z0-9_.:-]';
const name = (description: string) => ({ type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$', description });
const jobId = { type: 'string', pattern: '^[0-9]{1,19}$', description: 'a job id (digits)' };
const nullable = (type: string, extra: object = {}) => ({ type: [type, 'null'], ...extra });
const dateTime = { type: 'string', format: 'date-time' };
/** A reply object: every property is always sent (null when empty), so the document says so. */
const reply = <P extends Record<string, object>>(properties: P) => ({ type: 'object', required: Object.keys(properties), properties }) as const;

const MAX_BATCH = 1000;
const MAX_WAIT_MS = 60_000;

/** One job to enqueue (POST /api/jobs, and each entry of a batch). */
export const enqueueInput = {
  type: 'object',
  required: ['kind'],
  additionalProperties: false,
  properties: {
    kind: name('the task to run'),
    queue: name(`queue name (default "${DEFAULTS.queue}")`),
    payload: { description: 'any JSON, handed to the task' },
    priority: { type: 'integer', minimum: -32768, maximum: 32767, description: `higher runs first (default ${DEFAULTS.priority})` },
    runAt: { ...dateTime, description: 'ISO 8601 with a time zone; not run before then' },
    maxAttempts: { type: 'integer', minimum: 1, maximum: MAX_ATTEMPTS_LIMIT, description: `attempts before the job fails (default ${DEFAULTS.maxAttempts})` },
    requires: {
      type: 'array',
      maxItems: 32,
      items: { type: 'string', minLength: 1, maxLength: 128 },
      description: 'capabilities a worker must offer to take the job',
    },
    idempotencyKey: { type: 'string', minLength: 1, maxLength: 255, description: 'the same key returns the same job' },
    group: name('the key of per-group limits (a tenant, a customer)'),
    tags: { type: 'array', maxItems: MAX_TAGS, items: name('a tag'), description: `labels to filter by (at most ${MAX_TAGS})` },
    timeoutMs: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_TIMEOUT_MS,
      description: 'an attempt running longer fails (the handler signal fires with a TimeoutError)',
    },
    expireAt: { ...dateTime, description: 'a job still queued at this time never starts: it becomes cancelled (event "expired")' },
    dependsOn: {
      type: 'array',
      maxItems: 1000,
      items: jobId,
      description: 'existing jobs to wait for: the job is blocked until they end (an unknown id is a 400)',
    },
    onParentFailure: {
      type: 'string',
      enum: ON_PARENT_FAILURE,
      description: 'cancel (default): a parent that fails, is cancelled, expires or is deleted cancels this job; run: it runs once every parent has ended',
    },
  },
} as const;

const job = {
  $id: 'Job',
  title: 'Job',
  ...reply({
    id: { type: 'string' },
    queue: { type: 'string' },
    kind: { type: 'string' },
    payload: {},
    priority: { type: 'integer' },
    status: { type: 'string', enum: JOB_STATUSES },
    attempt: { type: 'integer' },
    maxAttempts: { type: 'integer' },
    requires: { type: 'array', items: { type: 'string' } },
    idempotencyKey: nullable('string'),
    runAt: dateTime,
    createdAt: dateTime,
    startedAt: nullable('string', { format: 'date-time' }),
    finishedAt: nullable('string', { format: 'date-time' }),
    lockedBy: nullable('string'),
    leaseExpiresAt: nullable('string', { format: 'date-time' }),
    cancelRequested: { type: 'boolean' },
    progress: nullable('object', {
      properties: { percent: { type: 'number' }, message: nullable('string') },
    }),
    result: {},
    lastError: nullable('object', { properties: { message: { type: 'string' } }, additionalProperties: true }),
    group: nullable('string'),
    tags: { type: 'array', items: { type: 'string' } },
    timeoutMs: nullable('integer'),
    expireAt: nullable('string', { format: 'date-time' }),
    waitingFor: {
      type: ['string', 'null'],
      enum: [...WAITING_REASONS, null],
      description: 'why a queued or blocked job is held back: its parents (dependencies), runAt ahead, queue paused, a limit reached, or no live worker takes it',
    },
    flowId: nullable('string', { description: 'the flow that made the job' }),
    ref: nullable('string', { description: 'its ref in that flow' }),
    dependsOn: { type: 'array', items: { type: 'string' }, description: 'the job ids it waits for, in order' },
    onParentFailure: { type: ['string', 'null'], enum: [...ON_PARENT_FAILURE, null], description: 'null for a job without parents' },
  }),
} as const;

/** A job_events row as the API shows it; the SSE `data:` has the same fields. */
const jobEvent = {
  $id: 'JobEvent',
  title: 'JobEvent',
  ...reply({
    eventId: { type: 'string' },
    jobId: { type: 'string' },
    queue: { type: 'string' },
    kind: { type: 'string' },
    type: { type: 'string', enum: EVENT_TYPES },
    status: { type: 'string', enum: JOB_STATUSES },
    attempt: { type: 'integer' },
    worker: nullable('string'),
    at: dateTime,
    data: {},
    flowId: nullable('string'),
  }),
} as const;

const error = {
  $id: 'Error',
  title: 'Error',
  ...reply({
    statusCode: { type: 'integer' },
    error: { type: 'string' },
    message: { type: 'string' },
  }),
} as const;


const ref = (id: string) => ({ $ref: `${id}#` });
export const jobRef = ref('Job');
const errorRef = ref('Error');

/** The error replies a route can give, for the OpenAPI document. */
export function errors(...codes: number[]) {
  return Object.fromEntries(codes.map((c) => [c, errorRef]));
}

export const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: jobId },
} as const;

export const enqueueQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    wait: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_WAIT_MS,
      description: 'hold the reply up to this many ms until the job ends (202 if it has not)',
    },
  },
} as const;

export const idempotencyHeaders = {
  type: 'object',
  properties: { 'idempotency-key': { type: 'string', minLength: 1, maxLength: 255 } },
} as const;

export const batchBody = {
  type: 'object',
  required: ['jobs'],
  additionalProperties: false,
  properties: { jobs: { type: 'array', minItems: 1, maxItems: MAX_BATCH, items: enqueueInput } },
} as const;

/** The filters of GET /api/jobs; POST /api/jobs/bulk takes the same ones as its `filter`. */
const filterProperties = {
  queue: name('only this queue'),
  status: { type: 'string', enum: JOB_STATUSES },
  kind: name('only this kind'),
  payload: { type: 'string', minLength: 1, maxLength: 10_000, description: 'JSON containment: {"user":42} matches every payload holding it' },
  error: { type: 'string', minLength: 1, maxLength: 1000, description: 'a case-insensitive substring of lastError.message' },
  createdAfter: { ...dateTime, description: 'created at or after this ISO time' },
  createdBefore: { ...dateTime, description: 'created at or before this ISO time' },
  group: name('only jobs of this group'),
  tag: name('only jobs carrying this tag'),
  flow: { ...jobId, description: 'only jobs of this flow' },
} as const;

export const bulkBody = {
  type: 'object',
  required: ['action', 'filter'],
  additionalProperties: false,
  properties: {
    action: { type: 'string', enum: BULK_ACTIONS, description: 'retry: failed and cancelled jobs; cancel: queued, blocked and running; delete: succeeded, failed and cancelled (with their events)' },
    filter: {
      type: 'object',
      additionalProperties: false,
      properties: {
        ...filterProperties,
        payload: {
          description: 'JSON containment: the JSON value itself, or the same JSON as a string (as the query takes it)',
        },
      },
      description: 'the GET /api/jobs filters; it must name a queue, a status or a flow',
    },
    dryRun: { type: 'boolean', description: 'only count the matches' },
  },
} as const;

export const bulkResult = {
  type: 'object',
  required: ['matched'],
  properties: {
    matched: { type: 'integer', description: 'jobs the filter matched, in any status' },
    affected: { type: 'integer', description: 'jobs the action changed (absent on a dry run)' },
  },
} as const;

export const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...filterProperties,
    limit: { type: 'integer', minimum: 1, maximum: 500, default: DEFAULTS.listLimit },
    before: { ...jobId, description: 'page: jobs with a smaller id (the `next` of the previous page)' },
  },
} as const;

export const eventsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    queue: name('only events of this queue'),
    job: { ...jobId, description: 'only events of this job' },
    flow: { ...jobId, description: 'only events of this flow' },
    lastEventId: { type: 'string', maxLength: 64, description: 'resume after this cursor (the Last-Event-ID header wins); 0 = from the beginning' },
    token: { type: 'string', description: 'the API token, for EventSource (which cannot set headers)' },
  },
} as const;

/** The `:queue` of /api/queues/:queue routes. */
export const queueParams = {
  type: 'object',
  required: ['queue'],
  properties: { queue: name('the queue') },
} as const;

export const statsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { range: { type: 'string', enum: Object.keys(HISTORY_RANGES), default: '1h', description: '1h: 1-minute buckets; 24h: 15 minutes; 7d: 1 hour' } },
} as const;

export const queueStats = reply({
  buckets: {
    type: 'array',
    items: reply({
      at: dateTime,
      enqueued: { type: 'integer' },
      started: { type: 'integer' },
      succeeded: { type: 'integer' },
      failed: { type: 'integer' },
      waitP50Ms: nullable('number'),
      waitP95Ms: nullable('number'),
      depth: nullable('integer', { description: 'queued jobs at the end of the bucket; null when no rollup ran then' }),
    }),
  },
});

const rateLimit = {
  type: 'object',
  required: ['count', 'periodMs'],
  additionalProperties: false,
  properties: {
    count: { type: 'integer', minimum: QUEUE_LIMITS.rateCount.min, maximum: QUEUE_LIMITS.rateCount.max, description: 'most jobs started per window' },
    periodMs: { type: 'integer', minimum: QUEUE_LIMITS.ratePeriodMs.min, maximum: QUEUE_LIMITS.ratePeriodMs.max, description: 'the window, in ms' },
  },
} as const;

const concurrencyLimit = (description: string) => ({
  type: ['integer', 'null'],
  minimum: QUEUE_LIMITS.concurrency.min,
  maximum: QUEUE_LIMITS.concurrency.max,
  description,
});

/** PATCH /api/queues/:queue: any of the settings; null clears a limit. */
export const queuePatch = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    paused: { type: 'boolean', description: 'no job of the queue starts while paused; running ones finish' },
    concurrency: concurrencyLimit('most jobs of the queue running at once, across all workers'),
    groupConcurrency: concurrencyLimit('most jobs of one group running at once in the queue'),
    rateLimit: { anyOf: [rateLimit, { type: 'null' }], description: 'most jobs started in any window of periodMs' },
  },
} as const;


const queueInfo = {
  $id: 'QueueInfo',
  title: 'QueueInfo',
  ...reply({
    queue: { type: 'string' },
    ...Object.fromEntries(['queued', 'scheduled', 'running', 'succeeded', 'failed', 'cancelled', 'blocked'].map((k) => [k, { type: 'integer' }])),
    paused: { type: 'boolean' },
    concurrency: nullable('integer'),
    groupConcurrency: nullable('integer'),
    rateLimit: nullable('object', { properties: { count: { type: 'integer' }, periodMs: { type: 'integer' } } }),
    updatedBy: nullable('object', {
      required: ['role'],
      properties: {
        role: nullable('string', { description: "the token's role; null when auth is off" }),
        label: { type: 'string', description: "the token's label (HERALD_TOKENS entry role:label:token), when it has one" },
      },
      description: 'who last changed the settings; null when never changed or not recorded (rows from before it was)',
    }),
    updatedAt: nullable('string', { format: 'date-time', description: 'when the settings last changed; null when never' }),
  }),
} as const;

export const queueCounts = reply({ queues: { type: 'array', items: ref('QueueInfo') } });

const strings = { type: 'array', items: { type: 'string' } };
const nullableStrings = (description?: string) => ({ type: ['array', 'null'], items: { type: 'string' }, ...(description ? { description } : {}) });

export const workers = reply({
  workers: {
    type: 'array',
    items: reply({
      worker: { type: 'string', description: 'host:pid:random, as in lockedBy' },
      host: nullable('string'),
      pid: nullable('integer'),
      queues: nullableStrings('null: every queue'),
      kinds: nullableStrings(),
      capabilities: nullableStrings(),
      concurrency: nullable('integer'),
      running: { type: 'integer' },
      startedAt: nullable('string', { format: 'date-time' }),
      lastSeenAt: nullable('string', { format: 'date-time' }),
      since: nullable('string', { format: 'date-time' }),
      jobs: strings,
    }),
  },
});

const { idempotencyKey: _key, dependsOn: _parents, onParentFailure: _rule, ...scheduleJobProperties } = enqueueInput.properties;

/** PUT /api/schedules/:name. The cron expression and the zone are checked by croner (400s). */
export const scheduleInput = {
  type: 'object',
  required: ['cron', 'job'],
  additionalProperties: false,
  properties: {
    cron: { type: 'string', minLength: 1, maxLength: 200, description: '5 fields (minute hour day month weekday), or 6 with seconds first' },
    timezone: { type: 'string', minLength: 1, maxLength: 64, description: `IANA time zone (default ${DEFAULTS.timezone})` },
    job: { ...enqueueInput, properties: scheduleJobProperties, description: 'the job each tick makes: an enqueue body without idempotencyKey' },
    paused: { type: 'boolean', description: 'a paused schedule makes no jobs; resuming starts from the next tick' },
  },
} as const;

export const scheduleParams = {
  type: 'object',
  required: ['name'],
  properties: { name: name('the schedule') },
} as const;

const schedule = {
  $id: 'Schedule',
  title: 'Schedule',
  ...reply({
    name: { type: 'string' },
    cron: { type: 'string' },
    timezone: { type: 'string' },
    job: { type: 'object', additionalProperties: true },
    paused: { type: 'boolean' },
    nextRunAt: nullable('string', { format: 'date-time' }),
    lastRunAt: nullable('string', { format: 'date-time' }),
    lastJobId: nullable('string'),
  }),
} as const;

export const scheduleList = reply({ schedules: { type: 'array', items: ref('Schedule') } });

export const batchReply = reply({ jobs: { type: 'array', items: jobRef } });
const page = reply({ jobs: { type: 'array', items: jobRef }, next: nullable('string') });
/** A page of jobs; `searched` only when a search window cut it short (see GET /api/jobs). */
export const jobPage = {
  ...page,
  properties: { ...page.properties, searched: { type: 'integer', description: 'present when the search window cut this page short: jobs looked at' } },
} as const;
export const jobEvents = reply({ events: { type: 'array', items: ref('JobEvent') } });

export const health = reply({
  ok: { type: 'boolean' },
  db: { type: 'string', enum: ['up', 'down'] },
  listener: { type: 'string', enum: ['up', 'down', 'polling', 'connecting'] },
  streamLagMs: nullable('number'),
  streamHeldBy: {
    ...reply({
      xid: { type: 'string' },
      pid: nullable('integer'),
      applicationName: nullable('string'),
      state: nullable('string', { description: "pg_stat_activity's state, or 'prepared' for a prepared transaction" }),
      gid: nullable('string', { description: 'a prepared transaction’s name' }),
      transactionStart: nullable('string', { format: 'date-time' }),
      queryStart: nullable('string', { format: 'date-time' }),
      ageMs: nullable('number'),
    }),
    type: ['object', 'null'],
    description:
      'The open transaction of this database that holds the event stream back (events committed after it wait until it ends), once it has been open 1 s; null when none does',
  },
  tables: {
    type: 'array',
    items: reply({
      name: { type: 'string' },
      liveTuples: { type: 'number' },
      deadTuples: { type: 'number' },
      lastAutovacuum: nullable('string', { format: 'date-time' }),
      lastVacuum: nullable('string', { format: 'date-time' }),
    }),
  },
});

/** Shared schemas, registered once with app.addSchema. */
export const sharedSchemas = [job, jobEvent, error, queueInfo, schedule];

// The schemas of POST /api/jobs and POST /api/jobs/batch (routes/enqueue.ts).
import { Type } from 'typebox';
import { DEFAULTS, MAX_ATTEMPTS_LIMIT, MAX_NAME_LENGTH, MAX_REQUIRES, MAX_TAGS, MAX_TIMEOUT_MS } from '../../queue/defaults.ts';
import { ON_PARENT_FAILURE } from '../../queue/job.ts';
import { MAX_FLOW_JOBS } from '../../queue/services/flows.ts';
import { DateTime, Job, JobId, Name, OneOf, Ref } from '../schemas.ts';

const MAX_BATCH = 1000;
const MAX_WAIT_MS = 60_000;

/** The fields of one job (a schedule's job and a flow's jobs take these too). */
export const enqueueFields = {
  kind: Name('the task to run'),
  queue: Type.Optional(Name(`queue name (default "${DEFAULTS.queue}")`)),
  payload: Type.Optional(Type.Unknown({ description: 'any JSON, handed to the task' })),
  priority: Type.Optional(Type.Integer({ minimum: -32768, maximum: 32767, description: `higher runs first (default ${DEFAULTS.priority})` })),
  runAt: Type.Optional(DateTime('ISO 8601 with a time zone; not run before then')),
  maxAttempts: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_ATTEMPTS_LIMIT, description: `attempts before the job fails (default ${DEFAULTS.maxAttempts})` }),
  ),
  requires: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }), {
      maxItems: MAX_REQUIRES,
      description: 'capabilities a worker must offer to take the job',
    }),
  ),
  idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'the same key returns the same job' })),
  group: Type.Optional(Name('the key of per-group limits (a tenant, a customer)')),
  tags: Type.Optional(Type.Array(Name('a tag'), { maxItems: MAX_TAGS, description: `labels to filter by (at most ${MAX_TAGS})` })),
  timeoutMs: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_TIMEOUT_MS,
      description: 'an attempt running longer fails (the handler signal fires with a TimeoutError)',
    }),
  ),
  expireAt: Type.Optional(DateTime('a job still queued at this time never starts: it becomes cancelled (event "expired")')),
};

/** What a job that waits for existing jobs adds (workflows). */
const dependencyFields = {
  dependsOn: Type.Optional(
    Type.Array(JobId(), {
      maxItems: MAX_FLOW_JOBS,
      description: 'existing jobs to wait for: the job is blocked until they end (an unknown id is a 400)',
    }),
  ),
  onParentFailure: Type.Optional(
    OneOf(ON_PARENT_FAILURE, {
      description: 'cancel (default): a parent that fails, is cancelled, expires or is deleted cancels this job; run: it runs once every parent has ended',
    }),
  ),
};

/** One job to enqueue (POST /api/jobs, each entry of a batch). */
export const enqueueBody = Type.Object({ ...enqueueFields, ...dependencyFields }, { additionalProperties: false });

export const enqueueQuery = Type.Object(
  {
    wait: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_WAIT_MS,
        description: 'hold the reply up to this many ms until the job ends (202 if it has not)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const idempotencyHeaders = Type.Object({ 'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255 })) });

export const batchBody = Type.Object(
  { jobs: Type.Array(enqueueBody, { minItems: 1, maxItems: MAX_BATCH }) },
  { additionalProperties: false },
);

export const batchReply = Type.Object({ jobs: Type.Array(Ref(Job)) }, { description: 'the new jobs, in the order sent' });

// The schemas of the workflow routes (routes/flows.ts): the body of POST /api/flows and the flow
// replies. The per-job fields are the enqueue body's (enqueue.schema.ts).
import { Type } from 'typebox';
import { JOB_STATUSES } from '../../queue/schema/index.ts';
import { DEFAULTS, FLOW_NAME_PATTERN, FLOW_NAME_RULE, MAX_NAME_LENGTH } from '../../queue/defaults.ts';
import { ON_PARENT_FAILURE } from '../../queue/job.ts';
import { FLOW_STATUSES, MAX_FLOW_JOBS } from '../../queue/services/flows.ts';
import { DateTime, Job, JobId, Name, Nullable, OneOf, Ref } from '../schemas.ts';
import { enqueueFields } from './enqueue.schema.ts';

const FlowId = (description = 'a flow id (digits)') => JobId(description);

const flowJob = Type.Object(
  {
    ...enqueueFields,
    ref: Name('unique in the request; dependsOn names it'),
    dependsOn: Type.Optional(Type.Array(Name('a ref of this request'), { maxItems: MAX_FLOW_JOBS, description: 'refs of this request to wait for' })),
    onParentFailure: Type.Optional(
      OneOf(ON_PARENT_FAILURE, {
        description: 'cancel (default): a parent that fails, is cancelled, expires or is deleted cancels this job; run: it runs once every parent has ended',
      }),
    ),
  },
  { additionalProperties: false },
);

export const flowBody = Type.Object(
  {
    name: Type.Optional(
      Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, pattern: FLOW_NAME_PATTERN, description: `a name for people to know the flow by: ${FLOW_NAME_RULE}` }),
    ),
    jobs: Type.Array(flowJob, { minItems: 1, maxItems: MAX_FLOW_JOBS }),
  },
  { additionalProperties: false },
);

export const flowParams = Type.Object({ id: FlowId() });

export const flowListQuery = Type.Object(
  {
    status: Type.Optional(OneOf(FLOW_STATUSES)),
    limit: Type.Integer({ minimum: 1, maximum: 500, default: DEFAULTS.listLimit }),
    before: Type.Optional(FlowId('page: flows with a smaller id (the `next` of the previous page)')),
  },
  { additionalProperties: false },
);

/** A flow as the API shows it: a component (routes/flows.ts registers it). */
export const Flow = Type.Object(
  {
    id: Type.String(),
    name: Nullable(Type.String()),
    status: OneOf(FLOW_STATUSES, { description: 'running until every job has ended; then succeeded when all did, else failed' }),
    createdAt: DateTime(),
    finishedAt: Nullable(DateTime()),
    counts: Type.Object(Object.fromEntries(JOB_STATUSES.map((s) => [s, Type.Integer()])) as Record<(typeof JOB_STATUSES)[number], ReturnType<typeof Type.Integer>>, {
      description: 'jobs per status',
    }),
  },
  { $id: 'Flow', title: 'Flow' },
);

export const flowCreated = Type.Object(
  { flow: Ref(Flow), jobs: Type.Array(Ref(Job), { description: 'in request order, each with its ref' }) },
  { description: 'the flow and its jobs, in request order' },
);

export const flowDetail = Type.Object(
  {
    flow: Ref(Flow),
    jobs: Type.Array(Ref(Job)),
    // A pair as a plain array schema: OpenAPI 3.0 has no tuples (prefixItems).
    edges: Type.Array(Type.Unsafe<[string, string]>(Type.Array(Type.String(), { minItems: 2, maxItems: 2 })), {
      description: '[parentId, childId] pairs',
    }),
  },
  { description: 'the flow' },
);

export const flowPage = Type.Object({ flows: Type.Array(Ref(Flow)), next: Nullable(Type.String()) }, { description: 'a page of flows' });

export const flowActed = Type.Object(
  { affected: Type.Integer({ description: 'jobs the action changed' }) },
  { description: 'how many jobs it changed' },
);

const relative = Type.Object({ id: Type.String(), ref: Nullable(Type.String()), kind: Type.String(), status: OneOf(JOB_STATUSES) });

export const jobRelatives = Type.Object(
  {
    parents: Type.Array(relative, { description: 'in dependsOn order (a deleted parent is missing)' }),
    children: Type.Array(relative),
  },
  { description: 'parents and children' },
);

// JSON Schemas of the workflow routes (server/routes/flows.ts): the body of POST /api/flows and
// the flow replies. The per-job fields are the enqueue body's (schemas.ts).
import { FLOW_STATUSES, MAX_FLOW_JOBS } from '../queue/flows.ts';
import { JOB_STATUSES } from '../queue/schema.ts';
import { DEFAULTS } from '../queue/defaults.ts';
import { enqueueInput, jobRef } from './schemas.ts';

const refName = { type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' };
const id = { type: 'string', pattern: '^[0-9]{1,19}$', description: 'a flow id (digits)' };
const { dependsOn: _ids, ...jobFields } = enqueueInput.properties;

export const flowBody = {
  type: 'object',
  required: ['jobs'],
  additionalProperties: false,
  properties: {
    name: { ...refName, description: 'a name to find the flow by' },
    jobs: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_FLOW_JOBS,
      items: {
        ...enqueueInput,
        required: ['ref', 'kind'],
        properties: {
          ...jobFields,
          ref: { ...refName, description: 'unique in the request; dependsOn names it' },
          dependsOn: { type: 'array', maxItems: MAX_FLOW_JOBS, items: refName, description: 'refs of this request to wait for' },
        },
      },
    },
  },
} as const;

export const flowParams = { type: 'object', required: ['id'], properties: { id } } as const;

export const flowListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', enum: FLOW_STATUSES },
    limit: { type: 'integer', minimum: 1, maximum: 500, default: DEFAULTS.listLimit },
    before: { ...id, description: 'page: flows with a smaller id (the `next` of the previous page)' },
  },
} as const;

const flowInfo = {
  $id: 'Flow',
  title: 'Flow',
  type: 'object',
  required: ['id', 'name', 'status', 'createdAt', 'finishedAt', 'counts'],
  properties: {
    id: { type: 'string' },
    name: { type: ['string', 'null'] },
    status: { type: 'string', enum: FLOW_STATUSES, description: 'running until every job has ended; then succeeded when all did, else failed' },
    createdAt: { type: 'string', format: 'date-time' },
    finishedAt: { type: ['string', 'null'], format: 'date-time' },
    counts: {
      type: 'object',
      required: [...JOB_STATUSES],
      properties: Object.fromEntries(JOB_STATUSES.map((s) => [s, { type: 'integer' }])),
      description: 'jobs per status',
    },
  },
} as const;

const flowRef = { $ref: 'Flow#' };

export const flowCreated = {
  type: 'object',
  required: ['flow', 'jobs'],
  properties: { flow: flowRef, jobs: { type: 'array', items: jobRef, description: 'in request order, each with its ref' } },
} as const;

export const flowDetail = {
  type: 'object',
  required: ['flow', 'jobs', 'edges'],
  properties: {
    flow: flowRef,
    jobs: { type: 'array', items: jobRef },
    edges: {
      type: 'array',
      items: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 2 },
      description: '[parentId, childId] pairs',
    },
  },
} as const;

export const flowPage = {
  type: 'object',
  required: ['flows', 'next'],
  properties: { flows: { type: 'array', items: flowRef }, next: { type: ['string', 'null'] } },
} as const;

export const flowActed = {
  type: 'object',
  required: ['affected'],
  properties: { affected: { type: 'integer', description: 'jobs the action changed' } },
} as const;

const relative = {
  type: 'object',
  required: ['id', 'ref', 'kind', 'status'],
  properties: { id: { type: 'string' }, ref: { type: ['string', 'null'] }, kind: { type: 'string' }, status: { type: 'string', enum: JOB_STATUSES } },
} as const;

export const jobRelatives = {
  type: 'object',
  required: ['parents', 'children'],
  properties: {
    parents: { type: 'array', items: relative, description: 'in dependsOn order (a deleted parent is missing)' },
    children: { type: 'array', items: relative },
  },
} as const;

export const flowSchemas = [flowInfo];

// Workflows over HTTP: create a flow (producer), read flows (viewer), cancel and retry one
// (admin), and a job's parents and children (viewer). The core is queue/services/flows.ts.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { NotFoundError } from '../../queue/errors.ts';
import type { ServerContext } from '../context.ts';
import { errors } from '../schemas.ts';
import { Flow, flowActed, flowBody, flowCreated, flowDetail, flowListQuery, flowPage, flowParams, jobRelatives } from './flows.schema.ts';
import { idParams } from './jobs.schema.ts';
import { findJob, pathId } from './jobs.ts';

export function flowRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.addSchema(Flow);
  const { queue, reads } = ctx;

  api.post(
    '/api/flows',
    {
      config: { role: 'producer' },
      schema: {
        tags: ['flows'],
        operationId: 'createFlow',
        summary: 'Create a flow: up to 1,000 jobs with refs and dependsOn, all or nothing',
        description:
          'Each job is an enqueue body with a `ref` (unique in the request) and `dependsOn` (refs of the same request). A job with ' +
          'parents is blocked until they end, then queued in the transaction that ends the last one. An unknown ref, a duplicate ' +
          'ref or a cycle is a 400 naming it; nothing is written.',
        body: flowBody,
        response: { 201: flowCreated, ...errors(400, 401, 403, 409, 413, 415, 503) },
      },
    },
    async (request, reply) => {
      const { name, jobs } = request.body;
      const made = await queue.createFlow(
        name ?? null,
        jobs.map(({ ref, dependsOn, onParentFailure, ...job }) => ({ ref, dependsOn, onParentFailure, job })),
      );
      return reply.code(201).send(made);
    },
  );

  api.get(
    '/api/flows',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['flows'],
        operationId: 'listFlows',
        summary: 'List flows, newest first',
        querystring: flowListQuery,
        response: { 200: flowPage, ...errors(400, 401, 403) },
      },
    },
    async (request) => reads.flows(request.query),
  );

  api.get(
    '/api/flows/:id',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['flows'],
        operationId: 'getFlow',
        summary: 'One flow: its status, counts, jobs and edges',
        params: flowParams,
        response: { 200: flowDetail, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const id = pathId(request.params, 'flow');
      // One created a moment ago may not be on the replica yet: the primary before a 404.
      const flow = (await reads.flow(id)) ?? (reads === queue ? null : await queue.flow(id));
      if (!flow) throw new NotFoundError(`flow ${id} does not exist`);
      return flow;
    },
  );

  const action = (verb: 'cancel' | 'retry', summary: string, description: string) =>
    api.post(
      `/api/flows/:id/${verb}`,
      {
        config: { role: 'admin' },
        schema: {
          tags: ['flows'],
          operationId: `${verb}Flow`,
          summary,
          description,
          params: flowParams,
          response: { 200: flowActed, ...errors(400, 401, 403, 404) },
        },
      },
      async (request) => {
        const id = pathId(request.params, 'flow');
        return { affected: await (verb === 'cancel' ? queue.cancelFlow(id, request.actor) : queue.retryFlow(id, request.actor)) };
      },
    );
  action('cancel', 'Cancel a flow', 'Every unfinished job becomes cancelled: queued and blocked ones at once, running ones through their signal.');
  action(
    'retry',
    'Retry a flow from where it failed',
    'Its failed and cancelled jobs run again: those without parents are queued, those with parents wait for them again.',
  );

  api.get(
    '/api/jobs/:id/dependencies',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['jobs'],
        operationId: 'getJobDependencies',
        summary: "A job's parents (in dependsOn order) and children",
        params: idParams,
        response: { 200: jobRelatives, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const id = pathId(request.params);
      if (!(await findJob(ctx, id))) throw new NotFoundError(`job ${id} does not exist`);
      return reads.relatives(id);
    },
  );
}

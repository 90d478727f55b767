// Durable jobs: their stored steps (viewer) and the signals their handlers wait for (producer).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { NotFoundError } from '../../queue/errors.ts';
import type { ServerContext } from '../context.ts';
import { errors } from '../schemas.ts';
import { signalBody, signalParams, signalReply, stepsReply } from './durable.schema.ts';
import { idParams } from './jobs.schema.ts';
import { pathId } from './jobs.ts';

export function durableRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.get(
    '/api/jobs/:id/steps',
    {
      config: { role: 'viewer' },
      schema: {
        params: idParams,
        tags: ['jobs'],
        operationId: 'listJobSteps',
        summary: "A durable job's stored steps (ctx.step), in the order they finished",
        response: { 200: stepsReply, ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const id = pathId(request.params);
      const steps = await ctx.queue.steps(id);
      if (steps.length === 0 && !(await ctx.queue.get(id))) throw new NotFoundError(`job ${id} does not exist`);
      return { steps };
    },
  );

  api.post(
    '/api/jobs/:id/signals/:name',
    {
      config: { role: 'producer' },
      schema: {
        params: signalParams,
        body: signalBody,
        tags: ['jobs'],
        operationId: 'signalJob',
        summary: 'Send a signal to a job (ctx.waitFor)',
        description:
          'Kept until the job waits for it, or wakes the job at once when it waits for it now. One value per job and name: ' +
          'a second one, or one after that wait timed out, is 409 HERALD_SIGNAL_SENT, as is a job that has ended.',
        response: { 202: signalReply, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const id = pathId(request.params);
      const { name } = request.params;
      const { woken } = await ctx.queue.signal(id, name, request.body?.payload, request.actor);
      request.log.info({ job: id, signal: name, woken, by: request.actor }, 'signal sent');
      return reply.code(202).send({ jobId: id, name, woken });
    },
  );
}

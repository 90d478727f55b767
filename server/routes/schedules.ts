// Recurring jobs: list, create or replace, delete, and run now. The workers' scheduler makes
// the jobs at each tick.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { NotFoundError } from '../../queue/errors.ts';
import type { ServerContext } from '../context.ts';
import { errors, Job, Ref } from '../schemas.ts';
import { Schedule, scheduleBody, scheduleList, scheduleParams } from './schedules.schema.ts';

export function scheduleRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.addSchema(Schedule);
  api.get(
    '/api/schedules',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['schedules'],
        operationId: 'listSchedules',
        summary: 'Every schedule, with its next and last run and the last job it made',
        response: { 200: scheduleList, ...errors(401, 403) },
      },
    },
    async () => ({ schedules: await ctx.queue.schedules() }),
  );

  api.put(
    '/api/schedules/:name',
    {
      config: { role: 'admin' },
      schema: {
        tags: ['schedules'],
        operationId: 'putSchedule',
        summary: 'Create or replace a schedule',
        description:
          'Each tick makes exactly one job (idempotency key schedule:NAME:TICK_ISO), whatever the number of workers. ' +
          'Ticks missed while no worker ran: only the latest one runs, once. The next tick counts from now.',
        params: scheduleParams,
        body: scheduleBody,
        response: {
          200: Ref(Schedule, { description: 'replaced' }),
          201: Ref(Schedule, { description: 'created' }),
          ...errors(400, 401, 403, 413, 415),
        },
      },
    },
    async (request, reply) => {
      const { schedule, created } = await ctx.queue.putSchedule(request.params.name, request.body);
      return reply.code(created ? 201 : 200).send(schedule);
    },
  );

  api.delete(
    '/api/schedules/:name',
    {
      config: { role: 'admin' },
      schema: {
        tags: ['schedules'],
        operationId: 'deleteSchedule',
        summary: 'Delete a schedule (jobs it made stay)',
        params: scheduleParams,
        // A 204 has no body: undefined to TypeScript, null to the document.
        response: { 204: Type.Unsafe<undefined>({ type: 'null', description: 'deleted' }), ...errors(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      if (!(await ctx.queue.deleteSchedule(name))) throw new NotFoundError(`schedule "${name}" does not exist`);
      return reply.code(204).send();
    },
  );

  api.post(
    '/api/schedules/:name/run',
    {
      config: { role: 'admin' },
      schema: {
        tags: ['schedules'],
        operationId: 'runSchedule',
        summary: "Make the schedule's job now",
        description: "The job's enqueued event names who asked (data.by: the token's role and label), like the other manual actions.",
        params: scheduleParams,
        response: { 201: Ref(Job), ...errors(400, 401, 403, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(await ctx.queue.runSchedule(request.params.name, request.actor)),
  );
}

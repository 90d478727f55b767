// Queues (counts and settings, and changing the settings) and the worker registry.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DEFAULTS } from '../../queue/defaults.ts';
import type { ServerContext } from '../context.ts';
import { errors, Ref } from '../schemas.ts';
import { QueueInfo, queueCounts, queueParams, queuePatch, queueStats, statsQuery, workers } from './queues.schema.ts';

export function queueRoutes(app: FastifyInstance, ctx: ServerContext): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  api.addSchema(QueueInfo);
  api.get(
    '/api/queues',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['operations'],
        operationId: 'listQueues',
        summary: 'Job counts and settings per queue (queued = runnable now, scheduled = runAt in the future)',
        description: 'Every queue that has jobs or settings.',
        response: { 200: queueCounts, ...errors(401, 403) },
      },
    },
    async () => ({ queues: await ctx.reads.counts() }),
  );

  api.patch(
    '/api/queues/:queue',
    {
      config: { role: 'admin' },
      schema: {
        tags: ['operations'],
        operationId: 'patchQueue',
        summary: "Change a queue's settings: pause, concurrency, groupConcurrency, rateLimit",
        description:
          'Any of the fields; an absent one keeps its value, null clears a limit. Works for a queue that has no jobs yet. ' +
          "The queue records who made the change (the token's role and label) and when: updatedBy, updatedAt. " +
          'The limits hold across every worker process at once. Once this returns, no job of a paused queue starts; ' +
          'resuming wakes the workers at once.',
        params: queueParams,
        body: queuePatch,
        response: { 200: Ref(QueueInfo), ...errors(400, 401, 403, 413, 415) },
      },
    },
    async (request) => {
      return ctx.queue.patchQueue(request.params.queue, request.body, request.actor);
    },
  );

  api.get(
    '/api/queues/:queue/stats',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['operations'],
        operationId: 'queueStats',
        summary: "A queue's history: enqueued, started, succeeded, failed, wait p50/p95 and depth over time",
        description:
          'range=1h gives 60 buckets of 1 minute, 24h 96 of 15 minutes, 7d 168 of 1 hour, oldest first, up to the current ' +
          '(still filling) one. Rolled up from the event log about every 10 s and kept 30 days. A queue without history ' +
          'gives empty buckets.',
        params: queueParams,
        querystring: statsQuery,
        response: { 200: queueStats, ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      const range = request.query.range ?? DEFAULTS.historyRange;
      return { buckets: await ctx.reads.history(request.params.queue, range) };
    },
  );

  api.get(
    '/api/workers',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['operations'],
        operationId: 'listWorkers',
        summary: 'Every live worker, idle ones too: where it runs, what it takes, and the jobs it runs now',
        description: 'A worker that died leaves the list within a few seconds. A process that holds jobs without registering (the core API used directly) is listed with its jobs and null registry fields.',
        response: { 200: workers, ...errors(401, 403) },
      },
    },
    async () => ({ workers: await ctx.queue.workers() }),
  );
}

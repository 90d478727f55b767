// What the board's overview needs: counts per queue, and who is running what.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.ts';
import { errors, queueCounts, workers } from '../schemas.ts';

export function queueRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get(
    '/api/queues',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['operations'],
        operationId: 'listQueues',
        summary: 'Job counts per queue (queued = runnable now, scheduled = runAt in the future)',
        response: { 200: queueCounts, ...errors(401, 403) },
      },
    },
    async () => ({ queues: await ctx.queue.counts() }),
  );

  app.get(
    '/api/workers',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['operations'],
        operationId: 'listWorkers',
        summary: 'Workers holding jobs now: how many, since when, which',
        response: { 200: workers, ...errors(401, 403) },
      },
    },
    async () => ({ workers: await ctx.queue.workers() }),
  );
}

// What the board's overview needs: counts per queue, and who is running what.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.ts';
import type { HistoryRange } from '../../queue/history.ts';
import { errors, queueCounts, queueStats, statsParams, statsQuery, workers } from '../schemas.ts';

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
        params: statsParams,
        querystring: statsQuery,
        response: { 200: { description: "the queue's history, oldest bucket first", ...queueStats }, ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      const { queue } = request.params as { queue: string };
      const { range } = request.query as { range: HistoryRange };
      return { buckets: await ctx.queue.history(queue, range) };
    },
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

// GET /metrics: Prometheus text (see server/metrics.ts for what is in it).
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.ts';
import { errors } from '../schemas.ts';

export function metricsRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get(
    '/metrics',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['operations'],
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        response: {
          200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...errors(401),
        },
      },
    },
    async (_request, reply) => {
      const text = await ctx.metrics.metrics();
      return reply.type(ctx.metrics.contentType).send(text);
    },
  );
}

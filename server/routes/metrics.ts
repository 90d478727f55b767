// GET /metrics: Prometheus text (see server/metrics.ts for what is in it).
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.ts';

export function metricsRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get(
    '/metrics',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics',
        response: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
    async (_request, reply) => {
      const text = await ctx.metrics.metrics();
      return reply.type(ctx.metrics.contentType).send(text);
    },
  );
}

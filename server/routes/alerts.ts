// GET /api/alerts (viewer): the alert conditions that hold now, from this server's own view.
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../context.ts';
import { alerts, errors } from '../schemas.ts';

export function alertRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get(
    '/api/alerts',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['operations'],
        operationId: 'getAlerts',
        summary: 'The conditions of the Prometheus alert rules that hold now (failing, stalled, no worker, stream held, workers dying)',
        querystring: { type: 'object', additionalProperties: false, properties: {} },
        response: { 200: { description: 'the conditions that hold; empty when all is well', ...alerts }, ...errors(400, 401) },
      },
    },
    async () => ({ alerts: await ctx.alerts.current() }),
  );
}

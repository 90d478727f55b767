// GET /api/alerts (viewer): the alert conditions that hold now, from this server's own view.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ServerContext } from '../context.ts';
import { Described, errors } from '../schemas.ts';
import { alertsQuery, alertsReply } from './alerts.schema.ts';

export function alertRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/alerts',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['operations'],
        operationId: 'getAlerts',
        summary: 'The conditions of the Prometheus alert rules that hold now (failing, stalled, no worker, stream held, workers dying)',
        querystring: alertsQuery,
        response: { 200: Described(alertsReply, 'the conditions that hold; empty when all is well'), ...errors(400, 401) },
      },
    },
    async () => ({ alerts: await ctx.alerts.current() }),
  );
}

// GET /api/health (no auth): 200 while the database answers, 503 while it does not; details
// (session pids, application names, table sizes) only to a valid token when auth is on. The
// process keeps running through an outage; the pool and the listener reconnect by themselves.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ReplicaStatus } from '../../queue/replica.ts';
import type { ServerContext } from '../context.ts';
import { Described, errors } from '../schemas.ts';
import { healthQuery, healthReply, type Health } from './health.schema.ts';

const DB_TIMEOUT_MS = 2_000;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export function healthRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/health',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getHealth',
        summary: 'Liveness of the database, the listener and the event stream; who holds the stream back; table bloat',
        // For probes: no token, whatever HERALD_TOKENS says.
        security: [],
        querystring: healthQuery,
        response: {
          200: Described(healthReply, 'everything is up'),
          503: Described(healthReply, 'the database is unreachable'),
          ...errors(400),
        },
      },
    },
    async (request, reply) => {
      // The table statistics double as the database probe.
      const [tables, holder] = await Promise.all([
        withTimeout(ctx.queue.tableStats(), DB_TIMEOUT_MS).catch((err: Error) => {
          request.log.debug({ err: err.message }, 'health: database unreachable');
          return null;
        }),
        withTimeout(ctx.hub.holder(), DB_TIMEOUT_MS).catch(() => null),
      ]);
      const state = ctx.hub.listener.state;
      // Probes get the states; who holds the stream and the table sizes need a token (when auth is on).
      const body: Health = {
        ok: tables !== null,
        db: tables !== null ? 'up' : 'down',
        listener: state === 'connecting' ? 'down' : state,
        streamLagMs: ctx.hub.lagMs(),
        replica: ctx.replica ? replicaHealth(ctx.replica.status()) : null,
        streamHeldBy: holder && !request.known ? { ...holder, pid: null, applicationName: null } : holder,
        tables: request.known ? (tables ?? []) : [],
      };
      return reply.code(body.ok ? 200 : 503).send(body);
    },
  );
}

const replicaHealth = ({ up, lagMs, maxLagMs, reading }: ReplicaStatus): Health['replica'] => ({ up, lagMs, maxLagMs, reading });

// GET /api/events: the live event stream over Server-Sent Events (@fastify/sse frames it).
// The work is in server/stream/: hub.ts (assembly), tailer.ts (the one database reader),
// fanout.ts (in-memory distribution), session.ts (one client: replay, hand-over, slow clients).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { parseCursor } from '../../queue/cursor.ts';
import type { ServerContext } from '../context.ts';
import { HeraldError } from '../../queue/errors.ts';
import { errors } from '../schemas.ts';
import { DEFAULTS } from '../../queue/defaults.ts';
import { eventsHeaders, eventsQuery, recentEvents, recentEventsQuery } from './events.schema.ts';

/** Seconds a client refused for the stream cap waits before it tries again. */
const STREAMS_RETRY_AFTER_S = 5;

export function eventRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/events',
    {
      // The fan-out serialises each event's data once for all clients (fanout.ts): send it as is.
      sse: { kind: 'only', serializer: (data: string) => data },
      config: { role: 'viewer', queryToken: true },
      schema: {
        tags: ['events'],
        operationId: 'streamEvents',
        summary: 'Job events, live, over Server-Sent Events',
        description:
          'Each message: `event: job`, `id:` an opaque cursor, `data:` {eventId, jobId, queue, kind, type, status, attempt, worker, at, data, flowId}. ' +
          'Filters: ?queue=, ?job=, ?flow=. ' +
          'Without Last-Event-ID the stream is live only (it starts with an `id:` naming its start; the Herald-Cursor header holds it too). ' +
          'A live stream that starts after retention removed events also gets the Herald-Removed-Through header, the highest position removed: a later resume from before it is told of that removal (`event: reset`), which is no loss of this stream\'s. ' +
          'With Last-Event-ID (header, or ?lastEventId=) it first replays every matching event after that cursor; 0 replays from the beginning. ' +
          'One whose cursor is older than what retention has since removed first gets `event: reset`, data {removedThrough}. ' +
          'Every event exactly once, each job in order. A comment every 15 s keeps the connection alive. ' +
          'A client that falls more than 10,000 events behind is disconnected and resumes with Last-Event-ID. ' +
          'A server with HERALD_MAX_STREAMS streams open answers 503 with Retry-After.',
        querystring: eventsQuery,
        headers: eventsHeaders,
        response: {
          200: { description: 'the event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          ...errors(400, 401, 403, 406, 503),
        },
      },
    },
    async (request, reply) => {
      const q = request.query;
      // The header wins: EventSource resends it on reconnect while the URL keeps the first ?lastEventId.
      const raw = request.headers['last-event-id'] ?? q.lastEventId;
      const after = raw === undefined || raw.trim() === '' ? null : parseCursor(raw);
      if (ctx.hub.full()) {
        // Each stream holds memory and a socket: past the cap, the client tries again later.
        reply.header('retry-after', String(STREAMS_RETRY_AFTER_S));
        throw new HeraldError('this server has as many open event streams as it serves (HERALD_MAX_STREAMS); try again shortly', 'HERALD_TOO_MANY_STREAMS');
      }
      await ctx.hub.open(reply, { queue: q.queue, jobId: q.job, flowId: q.flow }, after);
    },
  );

  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/events/recent',
    {
      config: { role: 'viewer' },
      schema: {
        tags: ['events'],
        operationId: 'listRecentEvents',
        summary: 'The newest events, newest first',
        description:
          'The events the stream has published last (up to ?limit=, optionally of one ?queue=), newest first: what a page shows before live ones come. ' +
          'To follow from there without a gap, open GET /api/events (this list has no cursor).',
        querystring: recentEventsQuery,
        response: { 200: recentEvents, ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      const { limit = DEFAULTS.recentEventsMax, queue } = request.query;
      // A board read: the replica's when one is set (it reads there as far as the tailer reached).
      return { events: await ctx.reads.recentEvents(ctx.hub.tailer.position, limit, queue) };
    },
  );
}

// Builds the Fastify instance: security headers, SSE, OpenAPI, auth, errors, routes, board.
// It takes its collaborators ready-made (see index.ts), so tests can inject into it directly.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import sse, { type SSEPluginOptions } from '@fastify/sse';
import type { Logger } from 'pino';
import type { ServerContext } from './context.ts';
import { installAuth, redactUrl, type Tokens } from './auth.ts';
import { frameworkErrors, installErrorHandlers } from './errors.ts';
import { sharedSchemas } from './schemas.ts';
import { MAX_NAME_LENGTH } from '../queue/defaults.ts';
import { registerBoard } from './board.ts';
import { installSecurityHeaders } from './security-headers.ts';
import { registerDocs, registerOpenApi } from './routes/docs.ts';
import { enqueueRoutes } from './routes/enqueue.ts';
import { jobRoutes } from './routes/jobs.ts';
import { durableRoutes } from './routes/durable.ts';
import { queueRoutes } from './routes/queues.ts';
import { scheduleRoutes } from './routes/schedules.ts';
import { healthRoutes } from './routes/health.ts';
import { alertRoutes } from './routes/alerts.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { eventRoutes } from './routes/events.ts';
import { flowRoutes } from './routes/flows.ts';

const BODY_LIMIT = 1024 * 1024;
const HEARTBEAT_MS = 15_000;

export interface AppOptions extends ServerContext {
  tokens: Tokens;
  logger: Logger;
  /** The built board; defaults to web/dist. */
  boardDir?: string;
  /** The SSE keep-alive comment interval (15 s). */
  heartbeatMs?: number;
  /** Called when close() begins, before Fastify waits for open connections. */
  onClosing?: () => void;
}

function requestForLog(req: { id?: unknown; method?: string; url?: string }) {
  return { id: req.id, method: req.method, url: redactUrl(req.url ?? '') };
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    // Every line about a request goes through these serializers: the stream's ?token= never reaches a log.
    // The cast fixes Fastify's logger type parameter to its base type, which the routes are typed with.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    loggerInstance: opts.logger.child({}, { serializers: { url: redactUrl, req: requestForLog } }) as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    // One line per request only at debug level (see the onResponse hook): info stays quiet under load.
    logController: new LogController({ disableRequestLogging: true }),
    // Unknown fields are rejected, not silently dropped: a typo like max_attempts gets a 400.
    ajv: { customOptions: { removeAdditional: false } },
    // Every name fits in a path segment (Fastify's default stops at 100 characters).
    routerOptions: { maxParamLength: MAX_NAME_LENGTH },
    frameworkErrors,
  });
  // JSON only: a text/plain body gets a 415 rather than a confusing schema error.
  app.removeContentTypeParser('text/plain');
  const ctx: ServerContext = {
    queue: opts.queue, reads: opts.reads, replica: opts.replica, hub: opts.hub, metrics: opts.metrics, alerts: opts.alerts, closing: opts.closing,
  };

  // Streams and held replies would keep close() waiting: end them first.
  app.addHook('preClose', async () => opts.onClosing?.());
  // Hooks every request runs take a callback, not a promise: no promise and microtask per request for nothing.
  // Below debug the hook is not installed: it would build the line's object on every request for nothing.
  if (opts.logger.isLevelEnabled('debug')) {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.debug({ method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
      done();
    });
  }

  installSecurityHeaders(app, {
    // The board is a Vite build: its own scripts only; Svelte and uPlot set inline styles.
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    // Plain HTTP is normal here (loopback, or behind a TLS proxy): no HSTS, no upgrade.
    hsts: false,
  });
  // The default export is the fastify-plugin wrapped one (global hooks); its types say otherwise.
  await app.register(sse as unknown as FastifyPluginAsync<SSEPluginOptions>, { heartbeatInterval: opts.heartbeatMs ?? HEARTBEAT_MS });
  await registerOpenApi(app);
  installAuth(app, opts.tokens);
  installErrorHandlers(app);
  for (const s of sharedSchemas) app.addSchema(s);

  enqueueRoutes(app, ctx);
  jobRoutes(app, ctx);
  durableRoutes(app, ctx);
  queueRoutes(app, ctx);
  scheduleRoutes(app, ctx);
  flowRoutes(app, ctx);
  eventRoutes(app, ctx);
  healthRoutes(app, ctx);
  alertRoutes(app, ctx);
  metricsRoutes(app, ctx);
  await registerDocs(app);
  await registerBoard(app, opts.boardDir);
  return app;
}

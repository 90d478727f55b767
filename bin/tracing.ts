// OpenTelemetry for the `herald` processes: when the standard OTLP endpoint variables are set, the
// Node SDK starts before anything else, with the official OTLP trace exporter for the protocol
// asked for (http/protobuf by default, or http/json) and @fastify/otel for the server's requests.
// The core only speaks @opentelemetry/api (queue/tracing.ts); this is the one place with an SDK,
// and it is imported only when tracing is asked for, so a process without it loads none of it.
import type { Logger } from 'pino';
import type { Life } from './process-life.ts';

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/** Whether the environment asks for traces (OTEL_EXPORTER_OTLP_ENDPOINT or ..._TRACES_ENDPOINT). */
export const tracingWanted = (env: NodeJS.ProcessEnv = process.env): boolean =>
  !!(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);

/** Starts the SDK when asked for; it is shut down (spans flushed) after everything else stops. */
export async function startTracing(life: Life, log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!tracingWanted(env)) return;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL "${protocol}" is not supported: use ${PROTOCOLS.join(' or ')}`);
  }
  const [{ NodeSDK }, { FastifyOtelInstrumentation }, { OTLPTraceExporter }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@fastify/otel'),
    protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  // The exporter reads the endpoint, headers and timeout from the standard OTEL_* variables.
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || 'herald',
    traceExporter: new OTLPTraceExporter(),
    // Registers itself on every Fastify instance as it is created (the server's request spans).
    instrumentations: [new FastifyOtelInstrumentation({ registerOnInitialization: true })],
  });
  sdk.start();
  life.started('tracing', () => sdk.shutdown());
  log.info(`tracing: OTLP ${protocol} to ${env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT}`);
}

// OpenTelemetry spans, on @opentelemetry/api only: the application (or `herald` CLI) brings the SDK.
// `send QUEUE` (PRODUCER) is made per enqueued job as a child of the caller's context, and its
// traceparent is stored with the job; the worker's `process QUEUE` links to it (worker/tracing.ts).
//
// Cost without an SDK: `tracing()` sees the API's no-op provider and nothing else runs (no span,
// no attribute object, no traceparent string). With an SDK that samples a span out, the span is
// non-recording and nothing is stored either.
import { ProxyTracerProvider, SpanKind, SpanStatusCode, context, trace, type Attributes, type Span, type SpanContext } from '@opentelemetry/api';

const tracer = trace.getTracer('herald');

// The API's no-op provider: what the global proxy hands out until an SDK registers one.
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/** False while no tracer provider is registered (the API is a no-op): skip every span. */
export function tracing(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

/** The messaging attributes every Herald span carries (OpenTelemetry messaging conventions). */
export function messagingAttributes(operation: 'send' | 'process', queue: string, kind: string, flowId?: string | null): Attributes {
  return {
    'messaging.system': 'herald',
    'messaging.operation.type': operation,
    'messaging.operation.name': operation,
    'messaging.destination.name': queue,
    'herald.job.kind': kind,
    ...(flowId ? { 'herald.flow.id': flowId } : {}),
  };
}

/** Marks a span failed with the error recorded, and ends it. */
export function endFailed(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  span.end();
}

/** W3C traceparent of a span: what the job keeps of its send. */
function traceparent(c: SpanContext): string {
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The send context a job keeps (its traceparent), or undefined for none or a malformed one. */
export function sendContext(stored: string | null | undefined): SpanContext | undefined {
  const m = stored ? TRACEPARENT.exec(stored) : null;
  if (!m) return undefined;
  const c: SpanContext = { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3], 16), isRemote: true };
  return trace.isSpanContextValid(c) ? c : undefined;
}

/** The part of an enqueue record a send span reads and writes. */
interface Sendable {
  queue: string;
  kind: string;
  trace: string | null;
}

/**
 * Starts `send QUEUE` for each record, as children of the current context, and stores each span's
 * traceparent in its record. Returns undefined when nothing records; otherwise call the result
 * once with the job ids (in record order; null for one not made) or the error.
 */
export function traceSends(records: Sendable[]): ((ids: (string | null)[] | null, err?: unknown) => void) | undefined {
  if (!tracing()) return undefined;
  const parent = context.active();
  const spans: (Span | undefined)[] = records.map((r) => {
    const span = tracer.startSpan(`send ${r.queue}`, { kind: SpanKind.PRODUCER }, parent);
    if (!span.isRecording()) return undefined;
    span.setAttributes(messagingAttributes('send', r.queue, r.kind));
    r.trace = traceparent(span.spanContext());
    return span;
  });
  if (spans.every((s) => s === undefined)) return undefined;
  return (ids, err) => {
    spans.forEach((span, i) => {
      if (!span) return;
      const id = ids?.[i];
      if (id) span.setAttribute('messaging.message.id', id);
      if (err !== undefined || !id) endFailed(span, err ?? new Error('no job was made'));
      else span.end();
    });
  };
}

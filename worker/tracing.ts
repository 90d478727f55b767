// The worker's span: `process QUEUE` (CONSUMER), one per attempt, linked to the job's send span
// (its stored traceparent), so a retry or a re-run after a crash is a new span linked to the same
// send. The handler runs inside it, so the spans of its own database or HTTP calls nest under it.
// Without an OpenTelemetry SDK nothing here runs (see queue/tracing.ts).
import { SpanKind, context, trace, type Span } from '@opentelemetry/api';
import type { ClaimedJob } from '../queue/claimed.ts';
import { endFailed, messagingAttributes, sendContext, tracing } from '../queue/tracing.ts';

const tracer = trace.getTracer('herald');

/** Starts the attempt's span; undefined when nothing records. */
export function startProcess(job: Pick<ClaimedJob, 'id' | 'queue' | 'kind' | 'attempt' | 'trace' | 'flowId'>): Span | undefined {
  if (!tracing()) return undefined;
  const link = sendContext(job.trace);
  const span = tracer.startSpan(`process ${job.queue}`, { kind: SpanKind.CONSUMER, links: link ? [{ context: link }] : [] });
  if (!span.isRecording()) return undefined;
  span.setAttributes({
    ...messagingAttributes('process', job.queue, job.kind, job.flowId),
    'messaging.message.id': job.id,
    'herald.job.attempt': job.attempt,
  });
  return span;
}

/** Runs `fn` with `span` as the active span. */
export const inSpan = <T>(span: Span, fn: () => T): T => context.with(trace.setSpan(context.active(), span), fn);

/** Ends the attempt's span: an error (or the signal's reason: timeout, cancel, lost lease) marks it failed. */
export function endProcess(span: Span, error: unknown): void {
  if (error === undefined) span.end();
  else endFailed(span, error);
}

/**
 * A step that runs (ctx.step, not a replayed one): `step NAME`, a child of the active span (the
 * run's process span, or a span of the handler's own around the call), with the step's name,
 * occurrence and outcome. `fn` runs inside it, so the spans of the step's own calls nest under it.
 * Without an SDK it only calls `fn`.
 */
export async function inStep<T>(name: string, occurrence: number, fn: () => Promise<T>): Promise<T> {
  if (!tracing()) return fn();
  const span = tracer.startSpan(`step ${name}`, { kind: SpanKind.INTERNAL, attributes: { 'herald.step.name': name, 'herald.step.occurrence': occurrence } });
  if (!span.isRecording()) return fn();
  try {
    const value = await inSpan(span, fn);
    span.setAttribute('herald.step.outcome', 'stored');
    span.end();
    return value;
  } catch (err) {
    span.setAttribute('herald.step.outcome', 'failed');
    endFailed(span, err);
    throw err;
  }
}

// Tracing on the library path, with an in-memory exporter: `send QUEUE` is a child of the
// caller's span and its traceparent is kept with the job; each attempt is a `process QUEUE` span
// linked to that send, the handler's own spans nest under it, and a failed attempt records its
// error. Without a registered SDK nothing is recorded or stored.
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { tracing } from '../queue/tracing.ts';
import { Worker } from './worker.ts';
import type { TaskContext } from './tasks.ts';
import { waitFor } from '../test/support/wait.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  trace.disable();
  context.disable();
  await db.drop();
});

const storedTrace = async (id: string) =>
  (await db.pool.query<{ trace: string | null }>('SELECT trace FROM herald.jobs WHERE id = $1', [id])).rows[0].trace;

// One SDK for the file (the API takes a global provider once; the modules' tracers keep it):
// each test that records starts from an empty exporter.
let exporter: InMemorySpanExporter | undefined;
function recording(): InMemorySpanExporter {
  if (!exporter) {
    exporter = new InMemorySpanExporter();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  }
  exporter.reset();
  return exporter;
}

describe('tracing', () => {
  it('records and stores nothing while no SDK is registered', async () => {
    expect(tracing()).toBe(false);
    const { job } = await db.queue.enqueue({ kind: 'k', queue: 'untraced' });
    const [batch] = await db.queue.enqueueMany([{ kind: 'k', queue: 'untraced' }]);
    expect(await storedTrace(job.id)).toBeNull();
    expect(await storedTrace(batch.job.id)).toBeNull();
  });

  it('follows a job from the caller’s span through send, each attempt’s process span and the handler’s own span', async () => {
    const exporter = recording();
    expect(tracing()).toBe(true);
    const tracer = trace.getTracer('test');

    // The caller's span is the parent of the send.
    const { job } = await tracer.startActiveSpan('caller', async (caller) => {
      try {
        return await db.queue.enqueue({ kind: 'flaky', queue: 'traced', payload: { n: 1 }, maxAttempts: 2 });
      } finally {
        caller.end();
      }
    });
    const spans = () => exporter.getFinishedSpans();
    const named = (name: string) => spans().filter((s) => s.name === name);
    const [caller] = named('caller');
    const [send] = named('send traced');
    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(send.parentSpanContext?.spanId).toBe(caller.spanContext().spanId);
    expect(send.spanContext().traceId).toBe(caller.spanContext().traceId);
    expect(send.attributes).toMatchObject({
      'messaging.system': 'herald', 'messaging.operation.type': 'send', 'messaging.destination.name': 'traced',
      'messaging.message.id': job.id, 'herald.job.kind': 'flaky',
    });
    const sc = send.spanContext();
    expect(await storedTrace(job.id)).toBe(`00-${sc.traceId}-${sc.spanId}-01`);

    // The first attempt fails, the retry succeeds; the handler makes a span of its own each time.
    let calls = 0;
    const flaky = async () =>
      tracer.startActiveSpan('handler work', async (own) => {
        own.end();
        if (++calls === 1) throw new Error('first attempt fails');
        return 'ok';
      });
    const w = new Worker({ databaseUrl: db.url, concurrency: 1, pollMs: 50, queues: ['traced'], tasks: { flaky }, backoffBaseMs: 1, backoffMaxMs: 1 });
    await w.start();
    try {
      await waitFor(async () => (await db.queue.get(job.id))?.status === 'succeeded', { what: 'the retry to succeed' });
      await waitFor(async () => named('process traced').length === 2, { what: 'both process spans to end' });
    } finally {
      await w.stop();
    }
    const processes = named('process traced').sort((a, b) => Number(a.attributes['herald.job.attempt']) - Number(b.attributes['herald.job.attempt']));
    const own = named('handler work');
    expect(own).toHaveLength(2);
    processes.forEach((p: ReadableSpan, i) => {
      expect(p.kind).toBe(SpanKind.CONSUMER);
      expect(p.attributes).toMatchObject({
        'messaging.system': 'herald', 'messaging.operation.type': 'process', 'messaging.destination.name': 'traced',
        'messaging.message.id': job.id, 'herald.job.kind': 'flaky', 'herald.job.attempt': i + 1,
      });
      expect(p.links.map((l) => l.context.spanId)).toEqual([sc.spanId]);
      expect(p.links[0].context.traceId).toBe(sc.traceId);
      // The handler ran inside it: its own span is a child.
      const child = own.find((o) => o.parentSpanContext?.spanId === p.spanContext().spanId);
      expect(child?.spanContext().traceId).toBe(p.spanContext().traceId);
    });
    expect(processes[0].status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'first attempt fails' });
    expect(processes[0].events.map((e) => e.name)).toEqual(['exception']);
    expect(processes[1].status.code).not.toBe(SpanStatusCode.ERROR);
  });
  // Mutations caught: inStep not called for a step that runs (no `step` spans); a replayed step
  // given a span of its own (a second `step charge`); `failed` not kept in DurableRun.step (no
  // last_error.step).
  it('makes a span of each step that runs, inside the attempt’s process span, with its name and outcome; a replayed step counts on the process span', async () => {
    const exporter = recording();
    const { job } = await db.queue.enqueue({ kind: 'order', queue: 'traced-steps', maxAttempts: 2 });
    let runs = 0;
    const order = async (_p: unknown, ctx: TaskContext) => {
      runs++;
      await ctx.step('charge', () => ({ receipt: 'r1' }));
      return ctx.step('ship', () => {
        if (runs === 1) throw new Error('carrier down');
        return 'shipped';
      });
    };
    const failedOnce = async () => {
      const { rows } = await db.pool.query<{ last_error: { message: string; step?: string } | null }>('SELECT last_error FROM herald.jobs WHERE id = $1', [job.id]);
      return rows[0].last_error;
    };
    const w = new Worker({ databaseUrl: db.url, concurrency: 1, pollMs: 50, queues: ['traced-steps'], tasks: { order }, backoffBaseMs: 1, backoffMaxMs: 1 });
    await w.start();
    try {
      await waitFor(async () => (await db.queue.get(job.id))?.status === 'succeeded', { what: 'the retry to succeed' });
      await waitFor(() => exporter.getFinishedSpans().filter((s) => s.name === 'process traced-steps').length === 2, { what: 'both process spans to end' });
    } finally {
      await w.stop();
    }
    expect(await failedOnce()).toMatchObject({ message: 'carrier down', step: 'ship' });
    const spans = exporter.getFinishedSpans();
    const processes = spans.filter((s) => s.name === 'process traced-steps').sort((a, b) => Number(a.attributes['herald.job.attempt']) - Number(b.attributes['herald.job.attempt']));
    const under = (p: ReadableSpan) =>
      spans.filter((s) => s.name.startsWith('step ') && s.parentSpanContext?.spanId === p.spanContext().spanId)
        .map((s) => [s.name, s.attributes['herald.step.name'], s.attributes['herald.step.outcome'], s.status.code]);
    expect(under(processes[0])).toEqual([
      ['step charge', 'charge', 'stored', SpanStatusCode.UNSET],
      ['step ship', 'ship', 'failed', SpanStatusCode.ERROR],
    ]);
    expect(under(processes[1])).toEqual([['step ship', 'ship', 'stored', SpanStatusCode.UNSET]]);
    expect(processes[0].attributes['herald.job.steps_replayed']).toBeUndefined();
    expect(processes[1].attributes['herald.job.steps_replayed']).toBe(1);
    const failed = spans.find((s) => s.name === 'step ship' && s.status.code === SpanStatusCode.ERROR)!;
    expect(failed.status.message).toBe('carrier down');
    expect(failed.attributes['herald.step.occurrence']).toBe(0);
  });
});

// Tracing across processes: a `herald server` and a `herald worker`, each exporting over OTLP to a
// loopback receiver in this test (the worker in http/json, the server in the default
// http/protobuf). An HTTP POST that carries a traceparent leads to the handler's own span: the
// job's send span is in the caller's trace, the worker's process span links to it, and the
// handler's span is a child of that process span.
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { spawnHerald, type HeraldProcess } from './support/herald-process.ts';
import { waitFor } from './support/wait.ts';

interface OtlpSpan { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; links?: { traceId: string; spanId: string }[]; attributes: { key: string; value: Record<string, unknown> }[] }
interface Received { contentType: string; body: Buffer }

let db: TestDatabase;
let receiver: http.Server;
let endpoint = '';
const received: Received[] = [];
const procs: HeraldProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') received.push({ contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': String(req.headers['content-type'] ?? 'application/json') }).end(req.headers['content-type'] === 'application/json' ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
});
afterAll(async () => {
  await Promise.all(procs.map((p) => p.dispose()));
  await new Promise((resolve) => receiver.close(resolve));
  await db.drop();
});

/** Every span the JSON exports held so far. */
const jsonSpans = (): OtlpSpan[] =>
  received
    .filter((r) => r.contentType === 'application/json')
    .flatMap((r) => (JSON.parse(r.body.toString('utf8')) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] }).resourceSpans)
    .flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));

// Two processes that load the OpenTelemetry SDK start slowly on a busy machine: a longer test timeout (no assertion is timed).
it('follows an HTTP POST with a traceparent to the handler’s own span, over OTLP', { timeout: 180_000 }, async () => {
  const common = { DATABASE_URL: db.url, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' };
  const server = spawnHerald(['server'], { ...common, PORT: '0', OTEL_SERVICE_NAME: 'herald-server-test' });
  const worker = spawnHerald(['worker', '--queues', 'traced', '--tasks', path.resolve(import.meta.dirname, 'fixtures/traced-tasks')], {
    ...common, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  });
  procs.push(server, worker);
  const url = String((await server.waitForMessage(/^Herald server listening on /, 60_000)).url);
  await worker.waitForMessage(/^worker started$/, 60_000);
  expect(server.lines.some((l) => l.msg === `tracing: OTLP http/protobuf to ${endpoint}`)).toBe(true);

  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const res = await fetch(`${url}/api/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    body: JSON.stringify({ kind: 'traced', queue: 'traced', payload: { n: 7 } }),
  });
  expect(res.status).toBe(201);
  const job = (await res.json()) as { id: string };
  // The send span continues the caller's trace, and the job keeps its context.
  const stored = (await db.pool.query<{ trace: string }>('SELECT trace FROM herald.jobs WHERE id = $1', [job.id])).rows[0].trace;
  const [, sendTrace, sendSpan] = stored.split('-');
  expect(sendTrace).toBe(traceId);

  // The worker's spans arrive as JSON: process QUEUE linked to the send, the handler's span inside it.
  await waitFor(() => jsonSpans().some((s) => s.name === 'handler work'), { what: 'the handler\'s span to be exported as JSON' });
  const spans = jsonSpans();
  const processSpan = spans.find((s) => s.name === 'process traced')!;
  expect(processSpan.kind).toBe(5); // CONSUMER
  expect(processSpan.links).toEqual([expect.objectContaining({ traceId, spanId: sendSpan })]);
  const attrs = Object.fromEntries(processSpan.attributes.map((a) => [a.key, Object.values(a.value)[0]]));
  expect(attrs).toMatchObject({ 'messaging.system': 'herald', 'messaging.operation.type': 'process', 'messaging.destination.name': 'traced', 'messaging.message.id': job.id, 'herald.job.kind': 'traced' });
  expect(Number(attrs['herald.job.attempt'])).toBe(1);
  const own = spans.find((s) => s.name === 'handler work')!;
  expect(own.parentSpanId).toBe(processSpan.spanId);
  expect(own.traceId).toBe(processSpan.traceId);

  // The server's spans arrive as protobuf: the request's trace and the send span are in them.
  await waitFor(() => received.some((r) => r.contentType === 'application/x-protobuf' && r.body.includes(Buffer.from(sendSpan, 'hex'))), { what: 'the send span to be exported as protobuf' });
  const proto = received.find((r) => r.body.includes(Buffer.from(sendSpan, 'hex')))!;
  expect(proto.body.includes(Buffer.from(traceId, 'hex'))).toBe(true);
  expect(proto.body.includes(Buffer.from('send traced'))).toBe(true);
  expect(proto.body.includes(Buffer.from('herald-server-test'))).toBe(true);
});

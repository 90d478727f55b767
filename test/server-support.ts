// Helpers for the server tests: a server on a fresh test database, in-process workers made of
// the core's claim/complete/fail, and a raw SSE reader.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { pino } from 'pino';
import { afterEach, expect } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.ts';
import { checkRepliesAgainstDocument } from './support/openapi-contract.ts';
import { createServer, type HeraldServer, type ServerOptions } from '../server/index.ts';
import type { Queue } from '../queue/queue.ts';
import type { JobWait } from '../queue/schema/index.ts';
import { DurableService } from '../queue/services/durable.ts';

export const TOKENS = { viewer: 'viewer-token-0001', producer: 'producer-token-01', admin: 'admin-token-00001' } as const;
export const TOKEN_SPEC = `viewer:${TOKENS.viewer},producer:${TOKENS.producer},admin:${TOKENS.admin}`;

export const testLogger = () => pino({ level: process.env.HERALD_TEST_LOG ?? 'silent' });

export interface TestServer extends HeraldServer {
  db: TestDatabase;
  /** Set when listening over real HTTP. */
  url: string;
  close(): Promise<void>;
}

/** Replies of test servers that contradict the OpenAPI document; each test expects none. */
const contractProblems: string[] = [];
afterEach(() => {
  expect(contractProblems.splice(0), 'replies that contradict /api/openapi.json').toEqual([]);
});

/**
 * A server on its own database; `listen` puts it on a free loopback port. Its replies are
 * checked against its OpenAPI document (test/support/openapi-contract.ts).
 */
export async function testServer(opts: Partial<ServerOptions> & { listen?: boolean; db?: TestDatabase } = {}): Promise<TestServer> {
  const db = opts.db ?? (await createTestDatabase());
  const options: ServerOptions = { databaseUrl: db.url, logger: testLogger(), safetyMs: 100, ...opts };
  const server = await createServer(options);
  checkRepliesAgainstDocument(server.app, contractProblems);
  let url = '';
  if (opts.listen) {
    await server.app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(server.app.server.address() as { port: number }).port}`;
  }
  return {
    ...server,
    url,
    db,
    async close() {
      await server.stop();
      if (!opts.db) await db.drop();
    },
  };
}

/**
 * A job of `queue` whose durable run ended in `wait`, as a worker's ctx.sleep, waitFor or invoke
 * leaves it: claimed, then suspended (queued again with its wake-up time, or a hundred years
 * ahead). An invoke (`child`) enqueues its child in the same queue.
 */
export async function suspendedJob(queue: Queue, q: string, wait: JobWait): Promise<string> {
  const { job } = await queue.enqueue({ kind: 'durable', queue: q });
  const worker = `w:1:${q}`;
  const [claimed] = await queue.claim({ worker, queues: [q], limit: 1 });
  const r = await new DurableService(queue.db).suspend(worker, claimed, { wait, ...(wait.type === 'child' ? { invoke: { kind: 'child', queue: q } } : {}) });
  expect(r.kind).toBe('suspended');
  return job.id;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * An in-process worker built from the core API: claims, then completes each job, or fails it
 * when its payload says `{fail: true}`, or reports progress first when it says `{progress: n}`.
 */
export async function simulateWorker(queue: Queue, name: string, stop: AbortSignal): Promise<number> {
  let done = 0;
  while (!stop.aborted) {
    const jobs = await queue.claim({ worker: name, limit: 16, leaseMs: 60_000 });
    if (jobs.length === 0) {
      await sleep(5);
      continue;
    }
    const ok: { id: string; attempt: number; result: unknown }[] = [];
    const bad: { id: string; attempt: number; error: unknown }[] = [];
    for (const job of jobs) {
      const p = (job.payload ?? {}) as { fail?: boolean; progress?: number };
      if (p.progress) await queue.progress(name, job, p.progress, `step ${p.progress}`);
      if (p.fail) bad.push({ id: job.id, attempt: job.attempt, error: new Error('asked to fail') });
      else ok.push({ id: job.id, attempt: job.attempt, result: { ok: job.id } });
    }
    await queue.complete(name, ok);
    await queue.fail(name, bad);
    done += jobs.length;
  }
  return done;
}

interface SseMessage extends EventSourceMessage {
  json?: Record<string, unknown>;
}

/** One raw SSE connection (no reconnects): its messages, status and headers. */
export async function openStream(url: string, headers: Record<string, string> = {}) {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const messages: SseMessage[] = [];
  let ended = false;
  const done = (async () => {
    if (!res.ok || !res.body) return;
    const parser = createParser({ onEvent: (m) => messages.push({ ...m, json: m.data ? JSON.parse(m.data) : undefined }) });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // aborted
    }
    ended = true;
  })();
  return {
    res,
    messages,
    get ended() {
      return ended;
    },
    async close() {
      abort.abort();
      await done;
    },
  };
}

// Security headers on every reply, worked out once. They depend on nothing in the request (no
// CSP nonce: the board is a Vite build with no inline script), so helmet runs once at start
// against a recorder and each request only copies the result: per request, helmet (through
// @fastify/helmet) rebuilt its middleware and re-parsed the CSP directives.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';

/** The headers helmet sets for `options`, lower-cased. */
export function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: unknown) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  // Helmet throws a bad option at once (since 8.1 it no longer hands it to next).
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => {});
  return headers;
}

export function installSecurityHeaders(app: FastifyInstance, options: HelmetOptions): void {
  const headers = helmetHeaders(options);
  // onRequest, as @fastify/helmet did: every reply has them, a 404 or an early 4xx as well.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers);
    done();
  });
}

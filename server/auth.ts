// Bearer tokens from HERALD_TOKENS ("role:token" or "role:label:token", comma-separated). Each
// route names the least role it needs in its config; routes that name none are public (health,
// docs, the board). The label names who holds a token, so manual actions can record it.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../queue/queue.ts';
import { errorBody } from './errors.ts';

const ROLES = ['viewer', 'producer', 'admin'] as const;
type Role = (typeof ROLES)[number];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The least role this route needs; unset = no auth. */
    role?: Role;
    /** Accept ?token= (only GET /api/events: EventSource cannot send headers). */
    queryToken?: boolean;
  }
  interface FastifyRequest {
    /** Who sent the request, once auth has run: recorded on the events of manual actions. */
    actor: Actor;
  }
}

const rank = (r: Role) => ROLES.indexOf(r);
const digest = (s: string) => createHash('sha256').update(s).digest();

export interface Tokens {
  /** The role (and label) of a token, or undefined. Compares in constant time against every token. */
  actorOf(token: string): { role: Role; label?: string } | undefined;
  readonly size: number;
}

const LABEL = /^[A-Za-z0-9_.@-]{1,64}$/;

/**
 * Parses HERALD_TOKENS; throws a message that names the bad entry. An entry is role:token, or
 * role:label:token when the part after the role holds another colon: the label is then what
 * comes before it (1-64 of [A-Za-z0-9_.@-]), and the token the rest.
 */
export function parseTokens(spec: string | undefined): Tokens {
  const entries: { hash: Buffer; role: Role; label?: string }[] = [];
  const seen = new Map<string, Role>();
  for (const raw of (spec ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const i = raw.indexOf(':');
    const role = raw.slice(0, i) as Role;
    let token = raw.slice(i + 1);
    const bad = (why: string) =>
      new Error(`HERALD_TOKENS entry "${raw.slice(0, 20)}…" ${why}: use role:token or role:label:token with role viewer, producer or admin`);
    if (i < 0 || !ROLES.includes(role) || !token) throw bad('is malformed');
    let label: string | undefined;
    const j = token.indexOf(':');
    if (j >= 0) {
      label = token.slice(0, j);
      token = token.slice(j + 1);
      if (!LABEL.test(label) || !token) throw bad('has a bad label (1-64 of [A-Za-z0-9_.@-]) or no token after it');
    }
    if (seen.has(token) && seen.get(token) !== role) throw new Error(`HERALD_TOKENS gives one token two roles (${seen.get(token)} and ${role})`);
    seen.set(token, role);
    entries.push({ hash: digest(token), role, label });
  }
  return {
    size: entries.length,
    actorOf(token: string) {
      const h = digest(token);
      let found: { role: Role; label?: string } | undefined;
      for (const e of entries) if (timingSafeEqual(e.hash, h)) found = e.label ? { role: e.role, label: e.label } : { role: e.role };
      return found;
    },
  };
}

/** True for addresses only this machine can reach. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || h === '::ffff:127.0.0.1';
}

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header) {
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    return m ? m[1].trim() : undefined;
  }
  if (request.routeOptions.config.queryToken) {
    const t = (request.query as { token?: unknown } | undefined)?.token;
    if (typeof t === 'string' && t) return t;
  }
  return undefined;
}

function deny(reply: FastifyReply, code: 'HERALD_UNAUTHORIZED' | 'HERALD_FORBIDDEN', message: string) {
  const body = errorBody(code, message);
  if (body.statusCode === 401) reply.header('www-authenticate', 'Bearer realm="herald"');
  return reply.code(body.statusCode).send(body);
}

/** Checks each request against its route's role. No tokens configured: everything is open. */
export function installAuth(app: FastifyInstance, tokens: Tokens): void {
  // Without tokens nobody is known: actions record role null (auth off).
  app.decorateRequest('actor', null as unknown as Actor);
  app.addHook('onRequest', async (request) => {
    request.actor = { role: null };
  });
  if (tokens.size === 0) return;
  app.addHook('onRequest', async (request, reply) => {
    const need = request.routeOptions.config?.role;
    if (!need) return;
    const token = bearer(request);
    if (!token) {
      const hint = request.headers.authorization ? 'the Authorization header must be "Bearer TOKEN"' : 'send Authorization: Bearer TOKEN';
      return deny(reply, 'HERALD_UNAUTHORIZED', `this route needs a token: ${hint}`);
    }
    const actor = tokens.actorOf(token);
    if (!actor) return deny(reply, 'HERALD_UNAUTHORIZED', 'unknown token: it is not one of HERALD_TOKENS');
    const role = actor.role;
    request.actor = actor;
    if (rank(role) < rank(need)) {
      const allowed = ROLES.slice(rank(need)).join(' or ');
      return deny(reply, 'HERALD_FORBIDDEN', `a ${role} token cannot ${request.method} ${request.routeOptions.url}; it needs ${allowed}`);
    }
  });
}

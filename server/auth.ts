// Bearer tokens from HERALD_TOKENS ("role:token,role:token"). Each route names the least role
// it needs in its config; routes that name none are public (health, docs, the board).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
}

const rank = (r: Role) => ROLES.indexOf(r);
const digest = (s: string) => createHash('sha256').update(s).digest();

export interface Tokens {
  /** The role of a token, or undefined. Compares in constant time against every token. */
  roleOf(token: string): Role | undefined;
  readonly size: number;
}

/** Parses HERALD_TOKENS; throws a message that names the bad entry. */
export function parseTokens(spec: string | undefined): Tokens {
  const entries: { hash: Buffer; role: Role }[] = [];
  const seen = new Map<string, Role>();
  for (const raw of (spec ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const i = raw.indexOf(':');
    const role = raw.slice(0, i) as Role;
    const token = raw.slice(i + 1);
    if (i < 0 || !ROLES.includes(role) || !token) {
      throw new Error(`HERALD_TOKENS entry "${raw.slice(0, 20)}…" must be role:token with role viewer, producer or admin`);
    }
    if (seen.has(token) && seen.get(token) !== role) throw new Error(`HERALD_TOKENS gives one token two roles (${seen.get(token)} and ${role})`);
    seen.set(token, role);
    entries.push({ hash: digest(token), role });
  }
  return {
    size: entries.length,
    roleOf(token: string) {
      const h = digest(token);
      let found: Role | undefined;
      for (const e of entries) if (timingSafeEqual(e.hash, h)) found = e.role;
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

function deny(reply: FastifyReply, status: 401 | 403, message: string) {
  if (status === 401) reply.header('www-authenticate', 'Bearer realm="herald"');
  return reply.code(status).send(errorBody(status, message));
}

/** Checks each request against its route's role. No tokens configured: everything is open. */
export function installAuth(app: FastifyInstance, tokens: Tokens): void {
  if (tokens.size === 0) return;
  app.addHook('onRequest', async (request, reply) => {
    const need = request.routeOptions.config?.role;
    if (!need) return;
    const token = bearer(request);
    if (!token) {
      const hint = request.headers.authorization ? 'the Authorization header must be "Bearer TOKEN"' : 'send Authorization: Bearer TOKEN';
      return deny(reply, 401, `this route needs a token: ${hint}`);
    }
    const role = tokens.roleOf(token);
    if (!role) return deny(reply, 401, 'unknown token: it is not one of HERALD_TOKENS');
    if (rank(role) < rank(need)) {
      const allowed = ROLES.slice(rank(need)).join(' or ');
      return deny(reply, 403, `a ${role} token cannot ${request.method} ${request.routeOptions.url}; it needs ${allowed}`);
    }
  });
}

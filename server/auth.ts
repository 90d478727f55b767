// Bearer tokens from HERALD_TOKENS ("role:token" or "role:label:token", comma-separated). Each
// route names the least role it needs in its config; routes that name none are public (health,
// docs, the board). The label names who holds a token, so manual actions can record it.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../queue/queue.ts';
import { MIN_TOKEN_LENGTH } from '../queue/defaults.ts';
import { errorBody } from './errors.ts';
import { errors } from './schemas.ts';

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
    /** Auth is off, or the request carries a valid token: public routes may show it details. */
    known: boolean;
  }
}

const rank = (r: Role) => ROLES.indexOf(r);
const digest = (s: string) => createHash('sha256').update(s).digest();

export interface Tokens {
  /** The role (and label) of a token, or undefined. Compares in constant time against every token. */
  actorOf(token: string): { role: Role; label?: string } | undefined;
  readonly size: number;
  /** The auth mode in one line, for the start-up log ("auth: 2 viewer, 1 admin tokens"). */
  describe(): string;
}

const LABEL = /^[A-Za-z0-9_.@-]{1,64}$/;
const FORMAT = 'use role:token or role:label:token with role viewer, producer or admin';

/**
 * Parses HERALD_TOKENS (undefined: unset, auth off). Set, every entry must be valid, so a typo
 * or a stray comma never turns auth off unseen. An error names the bad entry by its position
 * only: a token must never reach a log. An entry is role:token or role:label:token; a token
 * holds no colon, so an entry with three is refused rather than split at a guess (read as a
 * label, the start of a token would silently leave a shorter one). A token has at least
 * MIN_TOKEN_LENGTH characters: a short one can be guessed.
 */
export function parseTokens(spec: string | undefined): Tokens {
  const entries: { hash: Buffer; role: Role; label?: string }[] = [];
  const seen = new Map<string, Role>();
  const parts = spec === undefined ? [] : spec.split(',');
  parts.forEach((part, index) => {
    const raw = part.trim();
    const bad = (why: string) => new Error(`HERALD_TOKENS entry ${index + 1} of ${parts.length} ${why}: ${FORMAT}`);
    if (!raw) throw bad('is empty (unset HERALD_TOKENS to run without auth, on loopback only)');
    const fields = raw.split(':');
    const role = fields[0] as Role;
    if (fields.length < 2) throw bad('has no role');
    if (!ROLES.includes(role)) throw bad('has an unknown role');
    if (fields.length > 3) throw bad('has more than two colons, which is ambiguous (a token may not hold a colon)');
    const token = fields[fields.length - 1];
    const label = fields.length === 3 ? fields[1] : undefined;
    if (label !== undefined && !LABEL.test(label)) throw bad('has a bad label (1-64 of [A-Za-z0-9_.@-])');
    if (!token) throw bad(label === undefined ? 'has no token' : 'has no token after its label');
    if (token.length < MIN_TOKEN_LENGTH) {
      throw bad(`has a token shorter than ${MIN_TOKEN_LENGTH} characters (make one with: openssl rand -hex 32)`);
    }
    if (seen.has(token) && seen.get(token) !== role) {
      throw new Error(`HERALD_TOKENS entry ${index + 1} gives a token two roles (${seen.get(token)} and ${role})`);
    }
    seen.set(token, role);
    entries.push({ hash: digest(token), role, label });
  });
  return {
    size: entries.length,
    actorOf(token: string) {
      const h = digest(token);
      let found: { role: Role; label?: string } | undefined;
      for (const e of entries) if (timingSafeEqual(e.hash, h)) found = e.label ? { role: e.role, label: e.label } : { role: e.role };
      return found;
    },
    describe() {
      if (entries.length === 0) return 'auth: off (loopback only)';
      const counts = ROLES.map((r) => [r, entries.filter((e) => e.role === r).length] as const).filter(([, n]) => n > 0);
      return `auth: ${counts.map(([r, n]) => `${n} ${r}`).join(', ')} token${entries.length === 1 ? '' : 's'}`;
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

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The host name of a Host header or an Origin, or undefined when it cannot be read. */
function hostName(value: string, scheme = ''): string | undefined {
  try {
    return new URL(`${scheme}${value}`).hostname;
  } catch {
    return undefined;
  }
}

// The headers a reverse proxy adds. A proxy on this host connects from loopback and may pass
// a loopback Host (nginx's default proxy_pass does), so only these show that the client is not.
const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip', 'via'] as const;

/**
 * With auth off the server answers only to this machine. A browser page of another site can
 * still reach loopback: by DNS rebinding (its own name resolving to 127.0.0.1: the Host header
 * gives it away, 421) or by a cross-site form or fetch (the Origin header does, 403). A client
 * behind a reverse proxy on this host is not on this machine: its proxy's headers give it away (403).
 */
function installLoopbackGuard(app: FastifyInstance): void {
  // The OpenAPI document says so on every route: 421, and 403 for a proxied request (public
  // routes have no 403 of their own).
  app.addHook('onRoute', (route) => {
    const response = route.schema?.response as Record<string, unknown> | undefined;
    if (response) Object.assign(response, errors(403, 421));
  });
  // The Host header is the same on nearly every request: the answer for the last one is kept
  // (parsing it as a URL was a visible part of a single enqueue's time).
  let lastHost: string | undefined;
  let lastHostLoopback = false;
  const loopbackHost = (host: string) => {
    if (host !== lastHost) {
      lastHostLoopback = isLoopback(hostName(host, 'http://') ?? '');
      lastHost = host;
    }
    return lastHostLoopback;
  };
  // A callback hook (no promise per request); one that replies does not call done.
  app.addHook('onRequest', (request, reply, done) => {
    request.actor = { role: null };
    request.known = true;
    const proxied = PROXY_HEADERS.find((h) => request.headers[h] !== undefined);
    if (proxied !== undefined) {
      reply.code(403).send(errorBody('HERALD_AUTH_REQUIRED', `this request came through a proxy (it carries ${proxied}) and this server has no HERALD_TOKENS: without tokens it serves loopback clients only; set HERALD_TOKENS to serve it through a proxy`));
      return;
    }
    const host = request.headers.host;
    if (host !== undefined && !loopbackHost(host)) {
      reply.code(421).send(errorBody('HERALD_MISDIRECTED', 'this server has no HERALD_TOKENS and answers only to a loopback Host (127.0.0.1, localhost, ::1)'));
      return;
    }
    const origin = request.headers.origin;
    if (origin !== undefined && !SAFE_METHODS.has(request.method) && !isLoopback(hostName(origin) ?? '')) {
      reply.code(403).send(errorBody('HERALD_CROSS_SITE', 'a page of another site may not change anything on this server (its Origin is not loopback)'));
      return;
    }
    done();
  });
}

/** Checks each request against its route's role. No tokens configured: open, to loopback only. */
export function installAuth(app: FastifyInstance, tokens: Tokens): void {
  // Without tokens nobody is known: actions record role null (auth off).
  app.decorateRequest('actor', null as unknown as Actor);
  app.decorateRequest('known', false);
  // Without tokens the loopback guard's hook sets them (one hook per request rather than two).
  if (tokens.size === 0) return installLoopbackGuard(app);
  app.addHook('onRequest', async (request, reply) => {
    request.actor = { role: null };
    request.known = false;
    const need = request.routeOptions.config?.role;
    const token = bearer(request);
    if (!need) {
      // A public route: a valid token only unlocks details (health), a bad one is no error.
      request.known = token !== undefined && tokens.actorOf(token) !== undefined;
      return;
    }
    if (!token) {
      const hint = request.headers.authorization ? 'the Authorization header must be "Bearer TOKEN"' : 'send Authorization: Bearer TOKEN';
      return deny(reply, 'HERALD_UNAUTHORIZED', `this route needs a token: ${hint}`);
    }
    const actor = tokens.actorOf(token);
    if (!actor) return deny(reply, 'HERALD_UNAUTHORIZED', 'unknown token: it is not one of HERALD_TOKENS');
    const role = actor.role;
    request.actor = actor;
    request.known = true;
    if (rank(role) < rank(need)) {
      const allowed = ROLES.slice(rank(need)).join(' or ');
      return deny(reply, 'HERALD_FORBIDDEN', `a ${role} token cannot ${request.method} ${request.routeOptions.url}; it needs ${allowed}`);
    }
  });
}

/** A URL fit for a log line: the value of ?token= (the stream's credential) replaced. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]');
}

// The board's HTTP calls go through the package's typed client (`herald/client`), on the page's
// own origin with the token the user gave. What is the board's own lives here: a 401 opens the
// token prompt, a network failure reads as a sentence, and errors are said in words for views.
import { HeraldApiError, HeraldClient, type CallOptions, type JobFilter as ApiFilter } from 'herald/client';
import { auth } from './auth.svelte';
import { normalizeEvent } from './live/normalize-event';
import type { BoardEvent, Health, JobFilter } from './types';

export { HeraldApiError };

/**
 * fetch, with "cannot reach the server" as an error reply of status 0 (an abort stays an abort).
 * A 401 opens the token prompt only when it refused the token in use now: a call still in flight
 * with a token the user has since replaced must not reopen the prompt over the new one.
 */
async function boardFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const sent = new Headers(init?.headers).get('authorization');
  let res: Response;
  try {
    res = await fetch(input, init);
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new HeraldApiError(0, `Cannot reach the server (${e instanceof Error ? e.message : 'network error'}).`);
  }
  if (res.status === 401 && sent === (auth.token ? `Bearer ${auth.token}` : null)) {
    const body = (await res.clone().json().catch(() => null)) as { message?: unknown } | null;
    auth.demand(typeof body?.message === 'string' ? body.message : 'a token is needed');
  }
  return res;
}

export const api = new HeraldClient({
  baseUrl: '',
  token: () => auth.token,
  fetch: boardFetch,
});

/** The board's filter as the API takes it: empty fields are no filter (the server judges the rest). */
export const apiFilter = (f: JobFilter): ApiFilter =>
  Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined && v !== ''));

/** True for the rejection of a call whose signal was aborted (a view that moved on). */
export const isAbort = (e: unknown) => e instanceof DOMException && e.name === 'AbortError';

/** A job's events as the board holds them (data checked to be an object). */
/** The newest events, newest first: the Overview's feed before live ones come. */
export async function recentEvents(limit: number, opts?: CallOptions): Promise<BoardEvent[]> {
  return (await api.recentEvents({ limit }, opts)).map(normalizeEvent).filter((e): e is BoardEvent => e !== null);
}

export async function jobEvents(id: string, opts?: CallOptions): Promise<BoardEvent[]> {
  return (await api.jobEvents(id, opts)).map(normalizeEvent).filter((e): e is BoardEvent => e !== null);
}

/** The health report; missing fields (a 503 from a server cut off from its database) read as down. */
export async function health(opts?: CallOptions): Promise<Health> {
  const b: Partial<Health> = (await api.health(opts)) ?? {};
  return {
    ok: b.ok === true,
    db: b.db ?? (b.ok ? 'up' : 'down'),
    listener: b.listener ?? 'down',
    streamLagMs: b.streamLagMs ?? null,
    replica: b.replica ?? null,
    streamHeldBy: b.streamHeldBy ?? null,
    tables: Array.isArray(b.tables) ? b.tables : [],
  };
}

/** The sentence a person reads for an error; 401 and 403 are said plainly. */
export function describeError(err: unknown): { text: string; auth: boolean; status: number } {
  if (err instanceof HeraldApiError) {
    const status = err.statusCode;
    if (status === 401) return { text: `A token is needed (401): ${err.message}`, auth: true, status };
    if (status === 403) return { text: `Your role cannot do this (403): ${err.message}`, auth: true, status };
    return { text: err.message, auth: false, status };
  }
  return { text: err instanceof Error ? err.message : String(err), auth: false, status: -1 };
}

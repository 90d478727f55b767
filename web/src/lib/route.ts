// Hash routes: #/ · #/jobs?queue=&status=&kind= · #/jobs/42 · #/queues/NAME · #/flows?status= · #/flows/7 · #/schedules · #/enqueue · #/workers · #/health

export type Route =
  | { name: 'overview' }
  | { name: 'jobs'; query: Record<string, string> }
  | { name: 'job'; id: string }
  | { name: 'enqueue'; query: Record<string, string> }
  | { name: 'queue'; queue: string }
  | { name: 'flows'; query: Record<string, string> }
  | { name: 'flow'; id: string }
  | { name: 'schedules' }
  | { name: 'workers' }
  | { name: 'health' }
  | { name: 'notfound'; path: string };

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/';
  const [pathPart, search = ''] = raw.split('?', 2);
  const path = '/' + pathPart.split('/').filter(Boolean).join('/');
  const query: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(search)) query[k] = v;

  if (path === '/') return { name: 'overview' };
  if (path === '/jobs') return { name: 'jobs', query };
  const m = /^\/jobs\/([^/]+)$/.exec(path);
  if (m) return { name: 'job', id: decodeURIComponent(m[1]) };
  const q = /^\/queues\/([^/]+)$/.exec(path);
  if (q) return { name: 'queue', queue: decodeURIComponent(q[1]) };
  if (path === '/flows') return { name: 'flows', query };
  const f = /^\/flows\/([^/]+)$/.exec(path);
  if (f) return { name: 'flow', id: decodeURIComponent(f[1]) };
  if (path === '/schedules') return { name: 'schedules' };
  if (path === '/enqueue') return { name: 'enqueue', query };
  if (path === '/workers') return { name: 'workers' };
  if (path === '/health') return { name: 'health' };
  return { name: 'notfound', path };
}

/** Builds a hash link, leaving out empty parameters. */
export function href(path: string, query: Record<string, string | null | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v) q.set(k, v);
  const s = q.toString();
  return `#${path}${s ? `?${s}` : ''}`;
}

export const jobHref = (id: string) => `#/jobs/${encodeURIComponent(id)}`;
export const queueHref = (queue: string) => `#/queues/${encodeURIComponent(queue)}`;
export const flowHref = (id: string) => `#/flows/${encodeURIComponent(id)}`;

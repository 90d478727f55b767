// Reading a Chromium trace of the board (browser.startTracing with TRACE_CATEGORIES): inside the
// renderer main thread's tasks over 50 ms, where the time went, by kind of work (script, layout,
// style, GC…) and by JS function (self time from the trace's own sampling profiler).

export const TRACE_CATEGORIES = [
  'toplevel',
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'v8.execute',
  'disabled-by-default-v8.cpu_profiler',
];

interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  id?: string;
  args?: { name?: string; data?: Record<string, unknown> };
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}

const LONG_US = 50_000;

const top = (m: Map<string, number>, n: number, totalUs: number) =>
  [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, us]) => `${(us / 1000).toFixed(0).padStart(6)} ms ${((us / totalUs) * 100).toFixed(0).padStart(3)}%  ${k}`);

/** Lines: the long tasks' total, then the kinds of work and the JS functions with most time in them. */
export function summarizeTrace(trace: { traceEvents: TraceEvent[] } | TraceEvent[]): string[] {
  const events = Array.isArray(trace) ? trace : trace.traceEvents;
  const main = events.find((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain');
  if (!main) return ['no renderer main thread in the trace'];
  const onMain = events.filter((e) => e.pid === main.pid && e.tid === main.tid && e.ph === 'X' && e.dur !== undefined);
  const long = onMain.filter((e) => e.name === 'RunTask' && e.dur! > LONG_US).sort((a, b) => a.ts - b.ts);
  if (!long.length) return ['no task over 50 ms in the trace'];
  const totalUs = long.reduce((s, e) => s + e.dur!, 0);
  const inLong = (ts: number) => {
    let lo = 0, hi = long.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (long[mid].ts + long[mid].dur! < ts) lo = mid + 1;
      else if (long[mid].ts > ts) hi = mid - 1;
      else return true;
    }
    return false;
  };

  // Kinds of work: each event's self time (its duration less its children's) inside the long tasks.
  const kinds = new Map<string, number>();
  const nested = onMain.filter((e) => e.name !== 'RunTask' && inLong(e.ts)).sort((a, b) => a.ts - b.ts || b.dur! - a.dur!);
  const stack: TraceEvent[] = [];
  const self = new Map<TraceEvent, number>();
  for (const e of nested) {
    while (stack.length && stack.at(-1)!.ts + stack.at(-1)!.dur! <= e.ts) stack.pop();
    if (stack.length) self.set(stack.at(-1)!, self.get(stack.at(-1)!)! - e.dur!);
    self.set(e, e.dur!);
    stack.push(e);
  }
  for (const [e, us] of self) kinds.set(e.name, (kinds.get(e.name) ?? 0) + Math.max(0, us));

  // JS functions: the sampling profiler's samples on the main thread's profile, timed inside long tasks.
  const fns = new Map<string, number>();
  const profile = events.find((e) => e.name === 'Profile' && e.pid === main.pid && e.tid === main.tid);
  if (profile) {
    const nodes = new Map<number, ProfileNode>();
    let t = Number(profile.args?.data?.startTime ?? 0);
    for (const chunk of events.filter((e) => e.name === 'ProfileChunk' && e.id === profile.id && e.pid === main.pid).sort((a, b) => a.ts - b.ts)) {
      const data = chunk.args!.data as { cpuProfile?: { nodes?: ProfileNode[]; samples?: number[] }; timeDeltas?: number[] };
      for (const n of data.cpuProfile?.nodes ?? []) nodes.set(n.id, n);
      const samples = data.cpuProfile?.samples ?? [];
      const deltas = data.timeDeltas ?? [];
      samples.forEach((id, i) => {
        const dt = deltas[i] ?? 0;
        t += dt;
        const f = nodes.get(id)?.callFrame;
        if (!f || !inLong(t) || f.functionName === '(idle)' || f.functionName === '(program)') return;
        const where = f.url ? ` ${f.url.replace(/^.*\//, '')}:${f.lineNumber + 1}:${f.columnNumber + 1}` : '';
        const key = `${f.functionName || '(anonymous)'}${where}`;
        fns.set(key, (fns.get(key) ?? 0) + Math.max(0, deltas[i + 1] ?? dt));
      });
    }
  }
  return [
    `${long.length} tasks over 50 ms in the trace, ${(totalUs / 1000).toFixed(0)} ms in all, longest ${(Math.max(...long.map((e) => e.dur!)) / 1000).toFixed(0)} ms; by kind of work:`,
    ...top(kinds, 10, totalUs),
    'by JS function (self time):',
    ...top(fns, 20, totalUs),
  ];
}

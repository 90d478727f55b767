// A CPU profile of this process over one stretch of work (the inspector's sampling profiler, what
// `node --cpu-prof` writes), summarised as the frames with the most self time: where the worker's
// own CPU goes, per job. The raw profile can be saved and opened in Chrome's DevTools.
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface Profile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

export interface Frame {
  frame: string;
  /** Self time, µs. */
  selfUs: number;
}

const ROOT = `${path.resolve(import.meta.dirname, '..')}/`;

/** `name file:line`, the file relative to the repository (or its package under node_modules). */
function frameName(f: CallFrame): string {
  if (!f.url) return f.functionName || '(anonymous)';
  const file = f.url.replace(/^file:\/\//, '').replace(ROOT, '').replace(/^.*node_modules\//, '');
  // A .ts file is transformed on load (tsx): its line numbers are the output's, not the source's.
  return `${f.functionName || '(anonymous)'} ${file}${file.endsWith('.ts') ? '' : `:${f.lineNumber + 1}`}`;
}

/** The package (node_modules), folder of this repository, or `node:` built-in a frame's code is in. */
function moduleName(f: CallFrame): string {
  if (!f.url) return f.functionName; // (garbage collector), (program)
  const file = f.url.replace(/^file:\/\//, '');
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (pkg) return pkg[1];
  if (file.startsWith(ROOT)) return `${file.slice(ROOT.length).split('/')[0]}/`;
  return file.startsWith('node:') ? 'node: built-ins' : file;
}

/** Nodes inside a call of `fn` (the bench's own accounting) or of the inspector (the profiler starting), at any depth. */
function under(p: Profile, fn: string): Set<number> {
  const out = new Set<number>();
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const mark = (id: number, inside: boolean): void => {
    const n = byId.get(id)!;
    const now = inside || n.callFrame.functionName === fn || n.callFrame.url === 'node:inspector';
    if (now) out.add(id);
    for (const c of n.children ?? []) mark(c, now);
  };
  mark(p.nodes[0].id, false);
  return out;
}

/** Self time per key, most first; idle time and the samples in `skip` left out. */
function bySelf(p: Profile, key: (f: CallFrame) => string, skip: Set<number>): Frame[] {
  const frameOf = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, number>();
  p.samples.forEach((id, i) => {
    const f = frameOf.get(id)!;
    if (f.functionName === '(idle)' || skip.has(id)) return;
    const k = key(f);
    self.set(k, (self.get(k) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  return [...self].map(([frame, selfUs]) => ({ frame, selfUs })).sort((a, b) => b.selfUs - a.selfUs);
}

export class CpuProfile {
  private readonly session = new Session();

  async start(): Promise<void> {
    this.session.connect();
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.start');
  }

  /**
   * Stops; the frames and modules by self time, and the profile written to `saveTo` if given.
   * Samples taken inside calls of the function named `skip` (the bench's own accounting) are left out.
   */
  async stop(saveTo: string | undefined, skip: string): Promise<{ frames: Frame[]; modules: Frame[]; busyUs: number }> {
    const { profile } = (await this.session.post('Profiler.stop')) as unknown as { profile: Profile };
    this.session.disconnect();
    if (saveTo) fs.writeFileSync(saveTo, JSON.stringify(profile));
    const bench = under(profile, skip);
    const frames = bySelf(profile, frameName, bench);
    return { frames, modules: bySelf(profile, moduleName, bench), busyUs: frames.reduce((s, f) => s + f.selfUs, 0) };
  }
}

// What the flow page draws: a flow's jobs and edges with wide fan-outs folded. Siblings of one
// kind with the same parents and the same children are interchangeable in the picture, so past
// a threshold they become one group node ("300 × resize"), which keeps a 1,000-job flow readable
// and its layout small. A group the user opened shows its jobs as a grid inside its box: their
// edges would all be the same, and a column of 300 boxes fitted to a screen reads as a line.
import { compareIds } from '../live/ids';
import { JOB_STATUSES, type JobStatus } from '../types';

/** More siblings than this fold into one group node. */
export const FAN_OUT_THRESHOLD = 8;

export interface FlowJobShape {
  id: string;
  ref: string | null;
  kind: string;
}

export type VisibleNode =
  | { type: 'job'; id: string; ref: string | null; kind: string }
  /** `id` is "g" and the group's smallest job id: stable while the flow's shape is. */
  | { type: 'group'; id: string; kind: string; members: { id: string; ref: string | null }[]; open: boolean };

export interface VisibleGraph {
  nodes: VisibleNode[];
  /** [from, to] between visible node ids, each pair once. */
  edges: [string, string][];
}

/**
 * The nodes and edges to draw. Jobs are keyed by kind, parents and children; a key shared by more
 * than `threshold` jobs is a group, open when its id is in `open`. Edges naming a job outside
 * `jobs` are dropped.
 */
export function visibleGraph(
  jobs: readonly FlowJobShape[],
  edges: readonly (readonly [string, string])[],
  open: ReadonlySet<string> = new Set(),
  threshold = FAN_OUT_THRESHOLD,
): VisibleGraph {
  const sorted = [...jobs].sort((a, b) => compareIds(a.id, b.id));
  const known = new Set(sorted.map((j) => j.id));
  const parents = new Map<string, string[]>();
  const children = new Map<string, string[]>();
  const push = (m: Map<string, string[]>, k: string, v: string) => {
    const list = m.get(k);
    if (list) list.push(v);
    else m.set(k, [v]);
  };
  const live = edges.filter(([p, c]) => known.has(p) && known.has(c));
  for (const [p, c] of live) {
    push(parents, c, p);
    push(children, p, c);
  }
  const ids = (m: Map<string, string[]>, id: string) => [...(m.get(id) ?? [])].sort(compareIds).join(',');

  const keyOf = new Map<string, string>();
  const bySignature = new Map<string, FlowJobShape[]>();
  for (const j of sorted) {
    const key = `${j.kind}\u0000${ids(parents, j.id)}\u0000${ids(children, j.id)}`;
    keyOf.set(j.id, key);
    const same = bySignature.get(key);
    if (same) same.push(j);
    else bySignature.set(key, [j]);
  }

  const nodeOf = new Map<string, string>();
  const nodes: VisibleNode[] = [];
  const placed = new Set<string>();
  for (const j of sorted) {
    if (placed.has(j.id)) continue;
    const same = bySignature.get(keyOf.get(j.id)!)!;
    const groupId = `g${same[0].id}`;
    if (same.length > threshold) {
      nodes.push({ type: 'group', id: groupId, kind: j.kind, members: same.map((m) => ({ id: m.id, ref: m.ref })), open: open.has(groupId) });
      for (const m of same) {
        nodeOf.set(m.id, groupId);
        placed.add(m.id);
      }
    } else {
      nodes.push({ type: 'job', id: j.id, ref: j.ref, kind: j.kind });
      nodeOf.set(j.id, j.id);
      placed.add(j.id);
    }
  }

  const seen = new Set<string>();
  const out: [string, string][] = [];
  for (const [p, c] of live) {
    const from = nodeOf.get(p)!;
    const to = nodeOf.get(c)!;
    const key = `${from}>${to}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push([from, to]);
  }
  return { nodes, edges: out };
}

/**
 * How many of `members` are in each status, in the board's status order, zero counts left out;
 * `before` is the count of the statuses ahead of it (where its segment of a bar starts).
 */
export function statusBreakdown(members: readonly { id: string }[], statusOf: (id: string) => JobStatus | undefined): { status: JobStatus; count: number; before: number }[] {
  const counts = new Map<JobStatus, number>();
  for (const { id } of members) {
    const s = statusOf(id);
    if (s) counts.set(s, (counts.get(s) ?? 0) + 1);
  }
  let before = 0;
  return JOB_STATUSES.filter((s) => counts.has(s)).map((status) => {
    const count = counts.get(status)!;
    before += count;
    return { status, count, before: before - count };
  });
}

/**
 * The flow's edges and, for a job a durable handler invoked (ctx.invoke), one from the job that
 * invoked it: the child is part of the flow's work, drawn where it came from.
 */
export function withInvokeEdges(
  jobs: readonly { id: string; invokedBy: string | null }[],
  edges: readonly (readonly [string, string])[],
): [string, string][] {
  const ids = new Set(jobs.map((j) => j.id));
  const invoked = jobs.filter((j) => j.invokedBy !== null && ids.has(j.invokedBy)).map((j): [string, string] => [j.invokedBy!, j.id]);
  return [...edges.map(([p, c]): [string, string] => [p, c]), ...invoked];
}

/** A key for a flow's shape (its jobs and edges, not their statuses): an equal key needs no new layout. */
export function shapeKey(jobs: readonly FlowJobShape[], edges: readonly (readonly [string, string])[]): string {
  const ids = jobs.map((j) => `${j.id}:${j.kind}`).sort();
  const pairs = edges.map(([p, c]) => `${p}>${c}`).sort();
  return `${ids.join(' ')}|${pairs.join(' ')}`;
}

/**
 * The flow page's "what is drawn" line: "52 jobs · 3 boxes" while fan-outs are folded; an open
 * group draws each of its jobs, so it counts them, not its one box.
 */
export function drawnSummary(jobs: number, graph: VisibleGraph): string {
  let boxes = 0;
  let open = 0;
  let folded = 0;
  for (const n of graph.nodes) {
    if (n.type === 'job') boxes++;
    else if (n.open) {
      open++;
      boxes += n.members.length;
    } else {
      folded++;
      boxes++;
    }
  }
  const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  const groups = [open ? `${plural(open, 'group', 'groups')} open` : '', folded ? `${plural(folded, 'group', 'groups')} folded` : ''].filter(Boolean);
  return `${plural(jobs, 'job', 'jobs')} · ${plural(boxes, 'box', 'boxes')}${groups.length ? ` (${groups.join(', ')})` : ''}`;
}

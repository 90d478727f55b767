// Where each node of the flow page goes: dagre's layered layout, left to right (parents before
// children, like time). It runs on the main thread, and only when the drawn node set changes.
import dagre, { type EdgeLabel, type GraphLabel, type NodeLabel } from '@dagrejs/dagre';
import type { VisibleGraph, VisibleNode } from './graph';

export const JOB_NODE = { width: 160, height: 40 };
export const GROUP_NODE = { width: 180, height: 54 };
/** An open group: a header, then its jobs in a grid of small cells. */
export const GRID = { cellW: 120, cellH: 28, gap: 6, pad: 10, head: 40 };

/**
 * Past this many drawn nodes dagre ranks with its tight-tree heuristic instead of network
 * simplex: network simplex gives shorter edges but its cost grows much faster on meshes of many
 * crossing edges (seconds at 1,000 nodes), and past a few hundred nodes a person reads the shape,
 * not the edge lengths.
 */
const SIMPLEX_MAX_NODES = 300;

export interface Point {
  x: number;
  y: number;
}

/** A node's box, (x, y) its top-left corner. */
interface NodeBox extends Point {
  width: number;
  height: number;
}

export interface FlowLayout {
  boxes: Map<string, NodeBox>;
  edges: { from: string; to: string; points: Point[] }[];
  width: number;
  height: number;
}

/**
 * The grid of an open group of `count` jobs: about 1.6 times as wide as tall, like the screen, so
 * fitting the flow keeps the cells large enough to read. `cell(i)` is the i-th job's corner.
 */
export function groupGrid(count: number): { cols: number; width: number; height: number; cell: (i: number) => Point } {
  const { cellW, cellH, gap, pad, head } = GRID;
  const cols = Math.max(1, Math.ceil(Math.sqrt((1.6 * count * (cellH + gap)) / (cellW + gap))));
  const rows = Math.ceil(count / cols);
  return {
    cols,
    width: Math.max(GROUP_NODE.width, 2 * pad + cols * cellW + (cols - 1) * gap),
    height: head + pad + rows * cellH + (rows - 1) * gap,
    cell: (i) => ({ x: pad + (i % cols) * (cellW + gap), y: head + Math.floor(i / cols) * (cellH + gap) }),
  };
}

function sizeOf(n: VisibleNode): { width: number; height: number } {
  if (n.type === 'job') return JOB_NODE;
  if (!n.open) return GROUP_NODE;
  const { width, height } = groupGrid(n.members.length);
  return { width, height };
}

export function layoutFlow(g: VisibleGraph): FlowLayout {
  const d = new dagre.graphlib.Graph<GraphLabel, NodeLabel, EdgeLabel>();
  d.setGraph({
    rankdir: 'LR',
    nodesep: 14,
    ranksep: 56,
    marginx: 10,
    marginy: 10,
    ranker: g.nodes.length > SIMPLEX_MAX_NODES ? 'tight-tree' : 'network-simplex',
  });
  d.setDefaultEdgeLabel(() => ({}));
  for (const n of g.nodes) d.setNode(n.id, { ...sizeOf(n) });
  for (const [from, to] of g.edges) d.setEdge(from, to);
  dagre.layout(d);

  const boxes = new Map<string, NodeBox>();
  for (const n of g.nodes) {
    const { x = 0, y = 0, width, height } = d.node(n.id);
    // dagre gives centres.
    boxes.set(n.id, { x: x - width / 2, y: y - height / 2, width, height });
  }
  // Siblings (same size, same parents, same children) go top to bottom in the order they were
  // made: dagre's crossing reduction may stack a fan-out count-2, count-1, count-0. Swapping them
  // changes no crossing; each edge takes the route dagre drew to the place its end now holds.
  const occupant = new Map<string, string>();
  const key = (id: string) => {
    const b = boxes.get(id)!;
    const ends = (m: 'predecessors' | 'successors') => [...(d[m](id) ?? [])].sort().join(',');
    return `${Math.round(b.x)}|${b.width}|${b.height}|${ends('predecessors')}|${ends('successors')}`;
  };
  const siblings = new Map<string, string[]>();
  for (const n of g.nodes) siblings.set(key(n.id), [...(siblings.get(key(n.id)) ?? []), n.id]);
  for (const ids of siblings.values()) {
    if (ids.length < 2) continue;
    const places = ids.map((id) => ({ id, box: boxes.get(id)! })).sort((a, b) => a.box.y - b.box.y);
    ids.forEach((id, i) => {
      occupant.set(id, places[i].id);
      boxes.set(id, { ...places[i].box });
    });
  }
  const at = (id: string) => occupant.get(id) ?? id;
  const edges = g.edges.map(([from, to]) => ({ from, to, points: (d.edge(at(from), at(to)).points ?? []).map(({ x, y }) => ({ x, y })) }));
  const graph = d.graph();
  return { boxes, edges, width: graph.width ?? 0, height: graph.height ?? 0 };
}

/** An SVG path through an edge's points. */
export function edgePath(points: readonly Point[]): string {
  return points.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
}

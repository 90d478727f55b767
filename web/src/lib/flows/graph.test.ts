// Unit tests for the flow page's folding of wide fan-outs (graph.ts): no browser, no server.
import { describe, expect, it } from 'vitest';
import { drawnSummary, FAN_OUT_THRESHOLD, shapeKey, statusBreakdown, visibleGraph, withInvokeEdges, type FlowJobShape } from './graph';

/** A root, `width` jobs of `kind` that wait for it, and a merge that waits for them all. */
function fan(width: number, kind = 'resize') {
  const jobs: FlowJobShape[] = [{ id: '1', ref: 'root', kind: 'fetch' }];
  const edges: [string, string][] = [];
  const merge = String(width + 2);
  for (let i = 0; i < width; i++) {
    const id = String(i + 2);
    jobs.push({ id, ref: `part-${i}`, kind });
    edges.push(['1', id], [id, merge]);
  }
  jobs.push({ id: merge, ref: 'merge', kind: 'merge' });
  return { jobs, edges };
}

describe('visibleGraph', () => {
  it('folds 1 → 300 → 1 into 3 nodes and 2 edges', () => {
    const { jobs, edges } = fan(300);
    const g = visibleGraph(jobs, edges);
    expect(g.nodes.map((n) => n.id)).toEqual(['1', 'g2', '302']);
    const group = g.nodes[1];
    expect(group).toMatchObject({ type: 'group', kind: 'resize' });
    expect(group.type === 'group' && group.members).toHaveLength(300);
    expect(g.edges).toEqual([['1', 'g2'], ['g2', '302']]);
  });

  it('draws every job at the threshold, and groups one past it', () => {
    expect(visibleGraph(fan(FAN_OUT_THRESHOLD).jobs, fan(FAN_OUT_THRESHOLD).edges).nodes).toHaveLength(FAN_OUT_THRESHOLD + 2);
    expect(visibleGraph(fan(FAN_OUT_THRESHOLD + 1).jobs, fan(FAN_OUT_THRESHOLD + 1).edges).nodes).toHaveLength(3);
  });

  it('an open group keeps its place and edges, and lists its jobs with their refs', () => {
    const { jobs, edges } = fan(300);
    const g = visibleGraph(jobs, edges, new Set(['g2']));
    expect(g.nodes.map((n) => n.id)).toEqual(['1', 'g2', '302']);
    const group = g.nodes[1];
    expect(group.type === 'group' && group.open).toBe(true);
    expect(group.type === 'group' && group.members.slice(0, 2)).toEqual([{ id: '2', ref: 'part-0' }, { id: '3', ref: 'part-1' }]);
    expect(g.edges).toHaveLength(2);
    expect(visibleGraph(jobs, edges).nodes[1]).toMatchObject({ open: false });
  });

  it('keeps apart siblings of another kind, or with other parents or children', () => {
    const { jobs, edges } = fan(20);
    jobs[5] = { ...jobs[5], kind: 'crop' }; // one of another kind
    jobs.push({ id: '100', ref: 'extra', kind: 'fetch' });
    edges.push(['100', '10']); // one with a second parent
    edges.push(['11', '100']); // one with a second child
    const g = visibleGraph(jobs, edges);
    const group = g.nodes.find((n) => n.type === 'group');
    expect(group?.type === 'group' && group.members).toHaveLength(17);
    expect(g.nodes.filter((n) => n.type === 'job').map((n) => n.id).sort()).toEqual(['1', '10', '100', '11', '22', '6'].sort());
  });

  it('two wide layers fully joined become two groups and one edge', () => {
    const jobs: FlowJobShape[] = [];
    const edges: [string, string][] = [];
    for (let i = 1; i <= 20; i++) jobs.push({ id: String(i), ref: null, kind: 'a' });
    for (let i = 21; i <= 40; i++) {
      jobs.push({ id: String(i), ref: null, kind: 'b' });
      for (let p = 1; p <= 20; p++) edges.push([String(p), String(i)]);
    }
    const g = visibleGraph(jobs, edges);
    expect(g.nodes.map((n) => n.id)).toEqual(['g1', 'g21']);
    expect(g.edges).toEqual([['g1', 'g21']]);
  });

  it('drops edges to jobs it was not given', () => {
    const g = visibleGraph([{ id: '1', ref: 'a', kind: 'k' }], [['1', '2'], ['0', '1']]);
    expect(g).toEqual({ nodes: [{ type: 'job', id: '1', ref: 'a', kind: 'k' }], edges: [] });
  });
});

describe('drawnSummary', () => {
  // Mutation caught: counting an open group as its one box (`boxes += n.members.length` → `boxes++`).
  it('counts an open group\'s jobs as boxes, a folded one as one', () => {
    const { jobs, edges } = fan(50);
    const folded = visibleGraph(jobs, edges);
    expect(drawnSummary(52, folded)).toBe('52 jobs · 3 boxes (1 group folded)');
    const group = folded.nodes.find((n) => n.type === 'group')!;
    expect(drawnSummary(52, visibleGraph(jobs, edges, new Set([group.id])))).toBe('52 jobs · 52 boxes (1 group open)');
    expect(drawnSummary(1, visibleGraph([{ id: '1', ref: 'a', kind: 'k' }], []))).toBe('1 job · 1 box');
  });
});

describe('statusBreakdown and shapeKey', () => {
  it('counts members per status in the board order, leaving out zeros and unknown ids', () => {
    const status = new Map([['1', 'succeeded'], ['2', 'blocked'], ['3', 'succeeded'], ['4', 'running']] as const);
    expect(statusBreakdown(['1', '2', '3', '4', '5'].map((id) => ({ id })), (id) => status.get(id as '1'))).toEqual([
      { status: 'running', count: 1, before: 0 },
      { status: 'succeeded', count: 2, before: 1 },
      { status: 'blocked', count: 1, before: 3 },
    ]);
  });

  it('a shape key ignores order but not a job or an edge more', () => {
    const { jobs, edges } = fan(3);
    const key = shapeKey(jobs, edges);
    expect(shapeKey([...jobs].reverse(), [...edges].reverse())).toBe(key);
    expect(shapeKey(jobs, edges.slice(1))).not.toBe(key);
    expect(shapeKey([...jobs, { id: '99', ref: null, kind: 'k' }], edges)).not.toBe(key);
  });
});

describe('withInvokeEdges', () => {
  // Mutation caught: the filter without `ids.has(j.invokedBy)` (an edge to a job the flow does not list).
  it('adds an edge from the job that invoked a child to the child, and none from a job outside the flow', () => {
    const jobs = [
      { id: '1', invokedBy: null },
      { id: '2', invokedBy: null },
      { id: '3', invokedBy: '2' },
      { id: '4', invokedBy: '77' },
    ];
    expect(withInvokeEdges(jobs, [['1', '2']])).toEqual([['1', '2'], ['2', '3']]);
    expect(withInvokeEdges(jobs.slice(0, 2), [['1', '2']])).toEqual([['1', '2']]);
  });
});

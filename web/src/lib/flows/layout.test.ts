// Unit tests for the flow page's layout (layout.ts, dagre) and its pan/zoom (viewbox.ts).
import { describe, expect, it } from 'vitest';
import { visibleGraph } from './graph';
import { edgePath, GRID, GROUP_NODE, groupGrid, JOB_NODE, layoutFlow } from './layout';
import { fitViewBox, panBy, zoomAt } from './viewbox';

describe('layoutFlow', () => {
  it('places parents left of their children, a group node at its own size, each edge from box to box', () => {
    const jobs = [{ id: '1', ref: 'fetch', kind: 'fetch' }, ...Array.from({ length: 12 }, (_, i) => ({ id: String(i + 2), ref: null, kind: 't' })), { id: '20', ref: 'merge', kind: 'merge' }];
    const edges = jobs.slice(1, 13).flatMap((j): [string, string][] => [['1', j.id], [j.id, '20']]);
    const g = visibleGraph(jobs, edges);
    const l = layoutFlow(g);
    const [root, group, merge] = ['1', 'g2', '20'].map((id) => l.boxes.get(id)!);
    expect(root.x + root.width).toBeLessThan(group.x);
    expect(group.x + group.width).toBeLessThan(merge.x);
    expect(group).toMatchObject(GROUP_NODE);
    expect(root).toMatchObject(JOB_NODE);
    expect(l.edges.map((e) => [e.from, e.to])).toEqual([['1', 'g2'], ['g2', '20']]);
    for (const e of l.edges) expect(e.points.length).toBeGreaterThanOrEqual(2);
    expect(l.width).toBeGreaterThanOrEqual(merge.x + merge.width);
    expect(edgePath([{ x: 1, y: 2 }, { x: 3.25, y: 4 }])).toBe('M1.0,2.0 L3.3,4.0');
  });
});

describe('fan-out order', () => {
  it('stacks the jobs of a fan-out top to bottom in the order they were made, each edge still ending at its box', () => {
    const jobs = [{ id: '1', ref: 'split', kind: 'split' }, ...[0, 1, 2].map((i) => ({ id: String(i + 2), ref: `count-${i}`, kind: 'count' })), { id: '5', ref: 'merge', kind: 'merge' }];
    const edges = ['2', '3', '4'].flatMap((id): [string, string][] => [['1', id], [id, '5']]);
    const l = layoutFlow(visibleGraph(jobs, edges));
    const ys = ['2', '3', '4'].map((id) => l.boxes.get(id)!.y);
    expect(ys).toEqual([...ys].sort((a, b) => a - b));
    expect(new Set(ys).size).toBe(3);
    for (const e of l.edges) {
      const box = l.boxes.get(e.to)!;
      const end = e.points.at(-1)!;
      expect(end.y, `${e.from}>${e.to}`).toBeGreaterThanOrEqual(box.y - 1);
      expect(end.y, `${e.from}>${e.to}`).toBeLessThanOrEqual(box.y + box.height + 1);
    }
  });
});

describe('groupGrid', () => {
  it('lays an open group of 300 out wider than tall, like a screen, every cell inside the box and apart', () => {
    const g = groupGrid(300);
    expect(g.width / g.height).toBeGreaterThan(1.2);
    expect(g.width / g.height).toBeLessThan(2.2);
    const cells = Array.from({ length: 300 }, (_, i) => g.cell(i));
    for (const c of cells) {
      expect(c.x + GRID.cellW).toBeLessThanOrEqual(g.width);
      expect(c.y + GRID.cellH).toBeLessThanOrEqual(g.height);
      expect(c.y).toBeGreaterThanOrEqual(GRID.head);
    }
    expect(new Set(cells.map((c) => `${c.x},${c.y}`)).size).toBe(300);
  });

  it('an open group takes its grid size in the layout', () => {
    const jobs = Array.from({ length: 20 }, (_, i) => ({ id: String(i + 1), ref: null, kind: 't' }));
    const l = layoutFlow(visibleGraph(jobs, [], new Set(['g1'])));
    expect(l.boxes.get('g1')).toMatchObject({ width: groupGrid(20).width, height: groupGrid(20).height });
  });
});

describe('viewBox', () => {
  it('fits the drawing at the screen aspect ratio, centred', () => {
    const vb = fitViewBox(1000, 100, 500, 500, 0);
    expect(vb).toEqual({ x: 0, y: -450, w: 1000, h: 1000 });
    // a small drawing is not blown up: shown at its size, in the middle
    expect(fitViewBox(100, 50, 800, 400, 0)).toEqual({ x: -350, y: -175, w: 800, h: 400 });
  });

  it('zooming keeps the point under the pointer in place, within bounds', () => {
    const vb = { x: 0, y: 0, w: 1000, h: 500 };
    const z = zoomAt(vb, 2, 0.25, 0.5, 1000);
    expect(z).toEqual({ x: 125, y: 125, w: 500, h: 250 });
    // the drawing point under the pointer: before 0 + 0.25·1000, after 125 + 0.25·500
    expect(z.x + 0.25 * z.w).toBe(250);
    expect(zoomAt(vb, 1e-6, 0, 0, 1000).w).toBe(4000);
    expect(zoomAt(vb, 1e6, 0, 0, 1000).w).toBe(120);
  });

  it('panning moves the drawing with the pointer', () => {
    expect(panBy({ x: 0, y: 0, w: 1000, h: 500 }, 50, -10, 500, 250)).toEqual({ x: -100, y: 20, w: 1000, h: 500 });
  });
});

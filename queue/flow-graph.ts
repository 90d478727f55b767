// The shape of a flow request, checked before anything is written: refs unique, every dependsOn
// naming a ref of the same request, no cycle. Returns the jobs in dependency order (parents
// first), the order they are inserted in, so every parent gets a smaller id than its children.
import { ValidationError } from './errors.ts';

export interface FlowNode {
  ref: string;
  dependsOn?: string[];
}

const list = (items: string[], max = 10) =>
  items.slice(0, max).map((s) => JSON.stringify(s)).join(', ') + (items.length > max ? `, and ${items.length - max} more` : '');

/** Indexes of `nodes` in an order where each comes after all it depends on. Throws ValidationError naming the problem. */
export function dependencyOrder(nodes: readonly FlowNode[]): number[] {
  const index = new Map<string, number>();
  const duplicates = new Set<string>();
  nodes.forEach((n, i) => (index.has(n.ref) ? duplicates.add(n.ref) : index.set(n.ref, i)));
  if (duplicates.size) throw new ValidationError(`duplicate ref ${list([...duplicates])}: each job of a flow needs its own ref`);

  const unknown = new Map<string, Set<string>>(); // unknown ref → the refs whose dependsOn names it
  const selfish: string[] = [];
  const repeated: string[] = [];
  for (const n of nodes) {
    const seen = new Set<string>();
    for (const d of n.dependsOn ?? []) {
      if (!index.has(d)) unknown.set(d, (unknown.get(d) ?? new Set()).add(n.ref));
      else if (d === n.ref) selfish.push(n.ref);
      if (seen.has(d)) repeated.push(`${n.ref} → ${d}`);
      seen.add(d);
    }
  }
  if (unknown.size) {
    const namers = [...new Set([...unknown.values()].flatMap((s) => [...s]))];
    throw new ValidationError(`unknown ref ${list([...unknown.keys()])} in the dependsOn of ${list(namers)}: a flow's dependsOn names refs of the same request`);
  }
  if (repeated.length) throw new ValidationError(`dependsOn names the same ref twice: ${list(repeated)}`);
  if (selfish.length) throw new ValidationError(`cycle: ${selfish[0]} → ${selfish[0]} (a job cannot depend on itself)`);

  // Kahn's algorithm, stable: among ready jobs the request's order is kept.
  const children: number[][] = nodes.map(() => []);
  const waiting = nodes.map((n) => n.dependsOn?.length ?? 0);
  nodes.forEach((n, i) => n.dependsOn?.forEach((d) => children[index.get(d)!].push(i)));
  const order: number[] = [];
  const ready = nodes.map((_, i) => i).filter((i) => waiting[i] === 0);
  for (let k = 0; k < ready.length; k++) {
    const i = ready[k];
    order.push(i);
    for (const c of children[i]) if (--waiting[c] === 0) ready.push(c);
  }
  if (order.length < nodes.length) throw new ValidationError(`cycle: ${findCycle(nodes, index, waiting).join(' → ')}`);
  return order;
}

/** One cycle among the jobs Kahn's algorithm could not order, as refs (first = last). */
function findCycle(nodes: readonly FlowNode[], index: Map<string, number>, waiting: number[]): string[] {
  // Every job left waits on another left one: walking its first such parent must come back round.
  const left = (i: number) => nodes[i].dependsOn!.map((d) => index.get(d)!).find((p) => waiting[p] > 0)!;
  let i = waiting.findIndex((w) => w > 0);
  const seenAt = new Map<number, number>();
  const path: number[] = [];
  while (!seenAt.has(i)) {
    seenAt.set(i, path.length);
    path.push(i);
    i = left(i);
  }
  // The walk went child → parent; say it parent → child, as the edges run.
  const cycle = path.slice(seenAt.get(i)).reverse();
  return [...cycle, cycle[0]].map((j) => nodes[j].ref);
}

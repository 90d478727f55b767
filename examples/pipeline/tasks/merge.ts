// Fan-in: adds up the counts of every `count` parent (ctx.parents, in dependsOn order) and
// returns the most frequent words.
import type { TaskContext } from '../../../worker/tasks.ts';

export default async function merge(payload: { top?: number }, ctx: TaskContext) {
  const total: Record<string, number> = {};
  for (const p of ctx.parents) {
    for (const [w, n] of Object.entries((p.result as { words: Record<string, number> }).words)) total[w] = (total[w] ?? 0) + n;
  }
  const top = Object.entries(total).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, payload.top ?? 3);
  return { parts: ctx.parents.length, top };
}

// One of N parallel transforms: counts the words of every `parts`-th line, starting at `part`.
// Its parent is `split`; its result goes on to `merge`.
import type { TaskContext } from '../../../worker/tasks.ts';

export default async function count(payload: { part: number; parts: number }, ctx: TaskContext) {
  const { lines } = ctx.parents[0].result as { lines: string[] };
  const words: Record<string, number> = {};
  lines.forEach((line, i) => {
    if (i % payload.parts !== payload.part) return;
    for (const w of line.toLowerCase().match(/[a-z']+/g) ?? []) words[w] = (words[w] ?? 0) + 1;
  });
  return { words };
}

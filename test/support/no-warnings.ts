// Every test file runs with this (vitest setupFiles): a process warning fails the file.
// Warnings are the runtime telling us about a real defect (a listener leak, an unhandled
// rejection handled late, a deprecated API we call), so none is tolerated, deprecations
// included: a dependency that starts emitting one is upgraded or replaced, not silenced.
// The check runs after each test, so the failure names the test that caused it.
import { afterEach, expect } from 'vitest';

// Files that share a worker without isolation (the pure project) run this once each: one
// listener per process, or the listeners themselves would leak.
const WARNINGS = Symbol.for('herald.test.warnings');
const holder = globalThis as typeof globalThis & { [WARNINGS]?: string[] };
const warnings = (holder[WARNINGS] ??= (() => {
  const seen: string[] = [];
  process.on('warning', (w) => seen.push(`${w.name}: ${w.message}`));
  return seen;
})());

afterEach(() => {
  const seen = warnings.splice(0);
  expect(seen, 'process warnings emitted during this test').toEqual([]);
});

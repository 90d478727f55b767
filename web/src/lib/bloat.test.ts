import { expect, it } from 'vitest';
import { vacuumOverdue } from './bloat';

// Mutation caught: dropping the size floor (`dead >= DEAD_ROWS_THAT_MATTER &&`) makes 97 of 121 rows red.
it('a fresh table with a large dead share but few dead rows is not red; a big one past the trigger is', () => {
  expect(vacuumOverdue(24, 97)).toBe(false);
  expect(vacuumOverdue(1_000_000, 100_000)).toBe(false); // under autovacuum's 20%
  expect(vacuumOverdue(1_000_000, 300_000)).toBe(true);
  expect(vacuumOverdue(100, 20_000)).toBe(true);
  expect(vacuumOverdue(null, 20_000)).toBe(false);
});

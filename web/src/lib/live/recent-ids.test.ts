// Unit tests for the duplicate guard (recent-ids.ts): no browser, no server.

import { describe, expect, it } from 'vitest';
import { RecentIds } from './recent-ids';

describe('RecentIds', () => {
  it('drops duplicates and forgets old ids past its cap', () => {
    const s = new RecentIds(4);
    expect(s.add('1')).toBe(true);
    expect(s.add('1')).toBe(false);
    expect(s.add('2')).toBe(true);
    expect(s.add('3')).toBe(true);
    expect(s.add('2')).toBe(false); // still remembered (the last cap/2 at least)
    expect(s.add('4')).toBe(true);
    expect(s.add('5')).toBe(true);
    expect(s.add('1')).toBe(true); // forgotten
  });
});

// Job and event ids are bigints sent as strings of digits.

/** Compares digit-string ids numerically without BigInt: longer is larger, then lexicographic. */
export function compareIds(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

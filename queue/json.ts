// How database values look in the API's JSON: times as ISO strings, int8 as strings of digits.
// The API's shapes are derived from the tables with these, so a column is declared once.

type Json<T> = T extends Date ? string : T extends bigint ? string : T;

/** A row of drizzle's `$inferSelect` (camelCase keys) with JSON values. */
export type JsonOf<R> = { [K in keyof R]: Json<R[K]> };

/** Every field may be null (a LEFT JOIN's missing side). */
export type Nullable<R> = { [K in keyof R]: R[K] | null };

// drizzle/current/ (the live functions, aggregates and triggers, one file each) is what a freshly
// migrated database reports, byte for byte: a migration that changes one without regenerating
// the view fails here.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { currentCode, writtenCode } from '../drizzle/current/generate.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 1 });
});
afterAll(() => db.drop());

it('drizzle/current/ holds the functions and triggers the migrated database has', async () => {
  const live = await currentCode(db.url);
  const written = writtenCode();
  const stale = [...new Set([...live.keys(), ...written.keys()])].filter((f) => live.get(f) !== written.get(f)).sort();
  expect(live.size).toBeGreaterThan(0);
  expect(stale, 'drizzle/current/ is stale: run npm run db:current').toEqual([]);
});

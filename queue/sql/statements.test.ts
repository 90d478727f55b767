// Every statement exported from queue/sql/ is prepared against a freshly migrated database: a
// renamed column, a dropped function or a parameter PostgreSQL cannot type fails here, not in a
// route. PREPARE parses, analyses and plans the text with untyped parameters, as node-postgres
// sends it, without running it.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/db.ts';
import type { Statement } from './statement.ts';

type AnyStatement = Statement<readonly unknown[], unknown>;

const isStatement = (v: unknown): v is AnyStatement =>
  typeof v === 'object' && v !== null && typeof (v as AnyStatement).name === 'string' && typeof (v as AnyStatement).text === 'string';

/** Every exported statement of every module here, with the module it came from; records of statements too (bulkStatements). */
async function exportedStatements(): Promise<{ file: string; st: AnyStatement }[]> {
  const dir = path.dirname(fileURLToPath(import.meta.url));
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts')).sort();
  const found: { file: string; st: AnyStatement }[] = [];
  for (const file of files) {
    const mod = (await import(/* @vite-ignore */ pathToFileURL(path.join(dir, file)).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      if (isStatement(value)) found.push({ file, st: value });
      else if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
        for (const inner of Object.values(value)) if (isStatement(inner)) found.push({ file, st: inner });
      }
    }
  }
  return found;
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 1 });
});
afterAll(() => db.drop());

it('prepares every exported statement of queue/sql/ against the migrated schema', async () => {
  const statements = await exportedStatements();
  // The finder finds them: a module's statements cannot silently drop out of the check.
  expect(statements.length).toBeGreaterThan(40);
  expect(new Set(statements.map((s) => s.st.name)).size, 'statement names are unique').toBe(statements.length);
  const failures: string[] = [];
  const client = await db.pool.connect();
  try {
    for (const { file, st } of statements) {
      try {
        await client.query(`PREPARE ${st.name} AS ${st.text}`);
        await client.query(`DEALLOCATE ${st.name}`);
      } catch (err) {
        failures.push(`${file} ${st.name}: ${(err as Error).message}`);
      }
    }
  } finally {
    client.release();
  }
  expect(failures).toEqual([]);
});

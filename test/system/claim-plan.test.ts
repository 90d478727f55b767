// The claim's plan on a deep backlog: 100,000 queued jobs and as many finished, 400,000 events,
// statistics in place. It still walks jobs_claim_order under its LIMIT, never sorting
// (test/support/claim-plan.ts); queue/claim-plan.test.ts checks the same at 1,000.
import { afterAll, beforeAll, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { expectClaimWalksIndexAt } from '../support/claim-plan.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 2 });
});
afterAll(() => db.drop());

it('walks jobs_claim_order without sorting at 100,000 queued and as many finished', async () => {
  await expectClaimWalksIndexAt(db.pool, 100_000);
});

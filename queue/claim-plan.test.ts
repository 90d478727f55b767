// The claim walks jobs_claim_order under its LIMIT and never sorts, on a small backlog
// (test/support/claim-plan.ts says what is checked; the system suite checks 100,000 queued).
import { afterAll, beforeAll, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../test/support/db.ts';
import { expectClaimWalksIndexAt } from '../test/support/claim-plan.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ poolSize: 2 });
});
afterAll(() => db.drop());

it('walks jobs_claim_order without sorting at 1,000 queued and as many finished', async () => {
  await expectClaimWalksIndexAt(db.pool, 1_000);
});

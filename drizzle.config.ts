import { defineConfig } from 'drizzle-kit';

// `npm run db:generate` writes the table migration into drizzle/. The functions and
// triggers live in a hand-written migration beside it (drizzle-kit generate --custom).
export default defineConfig({
  dialect: 'postgresql',
  schema: './queue/schema/index.ts',
  out: './drizzle',
  schemaFilter: ['herald'],
});

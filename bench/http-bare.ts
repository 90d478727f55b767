// The bare route `npm run bench -- --http` compares Herald's single enqueue with: Fastify, one
// INSERT per request into a one-column table, through a pool of createPool's default size, as Herald server's. No
// validation, no auth, no event, no NOTIFY: the least an HTTP enqueue can do. Run as its own
// process (like `herald server`), it prints {"url": ...} once it listens.
//   node bin/run-ts.js bench/http-bare.ts DATABASE_URL
import Fastify from 'fastify';
import { createPool } from '../queue/database.ts';

const pool = createPool(process.argv[2], { applicationName: 'herald:bench-bare' });
await pool.query('CREATE TABLE IF NOT EXISTS bare_jobs (payload jsonb NOT NULL)');
const app = Fastify();
app.post('/jobs', async (request, reply) => {
  await pool.query('INSERT INTO bare_jobs (payload) VALUES ($1)', [JSON.stringify(request.body)]);
  return reply.code(201).send({ ok: true });
});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ url })}\n`);
process.on('SIGTERM', () => void app.close().then(() => pool.end()).then(() => process.exit(0)));

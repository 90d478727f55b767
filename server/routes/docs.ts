// OpenAPI, generated from the route schemas: /api/openapi.json and Swagger UI at /api/docs.
import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';

/** Registers the generator; it must come before the routes it describes. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Herald',
        description: 'A PostgreSQL job queue: enqueue, inspect, cancel and retry jobs; follow their events live.',
        version: '0.1.0',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      // Relative: the document describes the server that serves it, wherever it is mounted.
      servers: [{ url: '/', description: 'this Herald server' }],
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a token from HERALD_TOKENS' } },
      },
      security: [{ bearer: [] }],
      tags: [
        { name: 'jobs', description: 'Enqueue and manage jobs' },
        { name: 'events', description: 'The event stream' },
        { name: 'operations', description: 'Queues and their settings, workers, health and metrics' },
        { name: 'schedules', description: 'Recurring jobs (cron)' },
        { name: 'flows', description: 'Workflows: jobs that wait for other jobs' },
      ],
    },
    // Shared schemas keep their $id (Job, JobEvent, Error) as their component name.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
}

export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, { routePrefix: '/api/docs' });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

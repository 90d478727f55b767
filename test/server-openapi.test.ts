// The OpenAPI document (/api/openapi.json) against Redocly's recommended rules, the linter
// behind `npx @redocly/cli lint`: no errors and no warnings. That every reply of the suite
// matches the document is checked for all test servers (test/support/openapi-contract.ts).
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testServer, type TestServer } from './server-support.ts';

let s: TestServer;
beforeAll(async () => {
  s = await testServer();
});
afterAll(() => s.close());

it('passes Redocly lint with the recommended rules, without a warning', async () => {
  const res = await s.app.inject({ method: 'GET', url: '/api/openapi.json' });
  expect(res.statusCode).toBe(200);
  const problems = await lintFromString({
    source: res.body,
    absoluteRef: 'openapi.json',
    config: await createConfig({ extends: ['recommended'] }),
  });
  const found = problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
  expect(found).toEqual([]);
});

it('names its schemas and says which fields every reply has', async () => {
  const doc = (await s.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  expect(Object.keys(doc.components.schemas).sort()).toEqual(['Error', 'Flow', 'Job', 'JobEvent', 'QueueInfo', 'Schedule']);
  for (const schema of Object.values<{ required?: string[]; properties: object }>(doc.components.schemas)) {
    expect(schema.required?.sort()).toEqual(Object.keys(schema.properties).sort());
  }
  expect(doc.paths['/api/health'].get.security).toEqual([]);
  for (const path of ['/api/jobs', '/api/jobs/batch']) expect(Object.keys(doc.paths[path].post.responses)).toContain('415');
  expect(Object.keys(doc.paths['/metrics'].get.responses)).toContain('401');
});

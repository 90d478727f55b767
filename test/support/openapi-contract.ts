// Every reply a test server sends is checked against its own OpenAPI document (/api/openapi.json)
// by openapi-backend's response validator: the status must be declared for the operation, the
// content type among the declared ones, and a JSON body must match the declared schema. A
// mismatch does not change the reply; it is recorded, and fails the test that caused it.
import type { FastifyInstance } from 'fastify';
import addFormats from 'ajv-formats';
import { OpenAPIBackend, type Document } from 'openapi-backend';

interface DeclaredResponse {
  content?: Record<string, unknown>;
}

export function checkRepliesAgainstDocument(app: FastifyInstance, problems: string[]): void {
  let backend: Promise<OpenAPIBackend> | undefined;
  const load = async () => {
    // A copy: the validator resolves $refs in place. `quick` skips its own check of the document,
    // which knows OpenAPI 3.0 only; this one is 3.1, and Redocly lints it (server-openapi.test.ts).
    // With the formats the document uses (date-time), so those are checked too, not warned about.
    const api = new OpenAPIBackend({
      definition: structuredClone(app.swagger()) as Document,
      strict: true,
      quick: true,
      customizeAjv: (ajv) => addFormats.default(ajv),
    });
    await api.init();
    return api;
  };
  app.addHook('onSend', async (request, reply, payload) => {
    const operationId = (request.routeOptions.schema)?.operationId;
    if (!operationId) return payload; // the board, the docs, unknown routes
    const api = await (backend ??= load());
    const where = `${request.method} ${request.url} → ${reply.statusCode} (${operationId})`;
    const declared = api.getOperation(operationId)?.responses?.[String(reply.statusCode)] as DeclaredResponse | undefined;
    if (!declared) {
      problems.push(`${where}: status not declared`);
      return payload;
    }
    const type = String(reply.getHeader('content-type') ?? '').split(';')[0].trim();
    if (declared.content && !(type in declared.content)) {
      problems.push(`${where}: content type ${type} not declared (${Object.keys(declared.content).join(', ')})`);
      return payload;
    }
    if (type === 'application/json' && typeof payload === 'string') {
      const result = api.validateResponse(JSON.parse(payload), operationId, reply.statusCode);
      if (!result.valid) problems.push(`${where}: ${JSON.stringify(result.errors)}\n  body: ${payload.slice(0, 500)}`);
    }
    return payload;
  });
}

/** The OpenAPI 3.1 document of the provisioning API, made from the operation table (api.ts). */
import { ERROR_CATALOG } from '../core/errors.js';
import { OPERATIONS, SCHEMAS, pathMatcher, type JsonSchema, type Operation } from './api.js';

/**
 * The description of an error status: the catalog's text and code of each error it answers
 * (core/errors.ts, ERROR_CATALOG), so the document says what the listener sends.
 */
export function errorDescription(status: number): string {
  const lines = Object.entries(ERROR_CATALOG)
    .filter(([, entry]) => entry.status === status)
    .map(([code, entry]) => `${entry.text} (${code})`);
  if (lines.length === 0) throw new Error(`no error code answers ${status}`);
  return lines.join('; ');
}

function operationObject(op: Operation): JsonSchema {
  const errorRef = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
  const responses: Record<string, JsonSchema> = {
    [String(op.success.status)]: {
      description: op.success.description,
      ...(op.success.schema ? { content: { 'application/json': { schema: op.success.schema } } } : {}),
    },
  };
  // A body that is not JSON (415) or too large (413) is refused before the operation runs.
  const bodyErrors = op.body ? [413, 415] : [];
  for (const status of [400, 401, ...op.errors, ...bodyErrors, 503]) {
    responses[String(status)] = { description: errorDescription(status), content: errorRef };
  }
  const parameters = [
    ...pathMatcher(op.path).names.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
    ...Object.entries(op.query ?? {}).map(([name, description]) => ({
      name,
      in: 'query',
      required: false,
      description,
      schema: { type: 'string' },
    })),
  ];
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body ? { requestBody: { required: true, content: { 'application/json': { schema: op.body } } } } : {}),
    responses,
  };
}

export function openApiDocument(version: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const op of OPERATIONS) (paths[op.path] ??= {})[op.method.toLowerCase()] = operationObject(op);
  paths['/v1/openapi.json'] = {
    get: {
      operationId: 'getOpenApi',
      summary: 'This document',
      responses: {
        '200': { description: 'the OpenAPI document', content: { 'application/json': { schema: { type: 'object' } } } },
        '401': {
          description: errorDescription(401),
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'ddns-bridge provisioning API',
      version,
      description: 'Accounts, hosts, update tokens and User-Agent blocks. Every request needs the admin bearer token.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: SCHEMAS,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: "the token of the config's admin.tokenFile" },
      },
    },
  };
}

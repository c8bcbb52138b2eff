/** The OpenAPI 3.1 document of the provisioning API, made from the operation table (api.ts). */
import { OPERATIONS, SCHEMAS, pathMatcher, type JsonSchema, type Operation } from './api.js';

const ERROR_TEXT: Record<number, string> = {
  400: 'invalid input: a field, the JSON or the path (ERR_INVALID_INPUT)',
  401: 'no or a wrong bearer token (ERR_UNAUTHORIZED)',
  404: 'no such account, host or token (ERR_NOT_FOUND)',
  409: 'it exists already, or its state forbids the change (ERR_CONFLICT)',
  502: 'the primary refused or did not answer the DNS change (ERR_DNS_…)',
  503: 'Redis did not answer (ERR_STORE_UNAVAILABLE)',
};

function operationObject(op: Operation): JsonSchema {
  const errorRef = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
  const responses: Record<string, JsonSchema> = {
    [String(op.success.status)]: {
      description: op.success.description,
      ...(op.success.schema ? { content: { 'application/json': { schema: op.success.schema } } } : {}),
    },
  };
  for (const status of [400, 401, ...op.errors, 503]) {
    responses[String(status)] = { description: ERROR_TEXT[status]!, content: errorRef };
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
          description: ERROR_TEXT[401]!,
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

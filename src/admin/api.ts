/**
 * The provisioning API (`/v1/…`): one table of operations, each with its path, its request and
 * response schemas and its handler over the admin service. The OpenAPI document (openapi.ts)
 * and the request validation (server.ts) are both made from this table, so they cannot drift
 * apart. Reference: docs/operators.md, "Provisioning API".
 */
import type { AdminService, HostStateChange } from '../app/admin.js';
import { keySnippets, tokenView } from '../app/admin.js';
import { TSIG_ALGORITHMS } from '../core/tsig.js';
import { ACCOUNT_NAME_PATTERN, ACCOUNT_NAME_RULE } from '../core/accounts.js';
import { DEFAULT_HOST_TYPE, HOST_STATES, HOST_TYPES, SETTABLE_HOST_STATES } from '../core/types.js';

export type JsonSchema = Record<string, unknown>;
export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** A request as the server hands it to any operation (see `operation` for the typed view). */
export interface ApiRequest<Body = Record<string, unknown>, Params = Record<string, string>> {
  /** Path parameters, decoded. */
  params: Params;
  query: URLSearchParams;
  /** The JSON body, already valid against the operation's `body` schema. */
  body: Body;
}

export interface ApiResult {
  status: number;
  body?: unknown;
}

export interface Operation {
  method: Method;
  /** OpenAPI path template, e.g. `/v1/accounts/{name}`. */
  path: string;
  operationId: string;
  summary: string;
  /** Query parameters (all optional strings). */
  query?: Record<string, string>;
  body?: JsonSchema;
  /** The success status and the schema of its body (none for 204). */
  success: { status: 200 | 201 | 204; schema?: JsonSchema; description: string };
  /** The error statuses it may answer besides 400 and 401 (see server.ts for the shape). */
  errors: readonly (404 | 409 | 502 | 503)[];
  handle(admin: AdminService, req: ApiRequest): Promise<ApiResult>;
}

/**
 * The type of a value valid against schema `S`, for the JSON Schema the bodies use: string,
 * boolean, integer, null, enum, oneOf, array, and object with `properties` and `required`
 * (unknown for anything else, so a handler must check it). ajv has checked the body against
 * the same schema (server.ts), so a handler reads typed fields with no cast.
 */
export type ValueOf<S> = S extends { enum: readonly (infer E)[] }
  ? E
  : S extends { oneOf: readonly (infer O)[] }
    ? ValueOf<O>
    : S extends { type: 'string' }
      ? string
      : S extends { type: 'boolean' }
        ? boolean
        : S extends { type: 'integer' }
          ? number
          : S extends { type: 'null' }
            ? null
            : S extends { type: 'array'; items: infer I }
              ? ValueOf<I>[]
              : S extends { type: 'object'; properties: infer P; required: readonly (infer R)[] }
                ? { [K in keyof P & R]: ValueOf<P[K]> } & { [K in Exclude<keyof P, R>]?: ValueOf<P[K]> }
                : unknown;

/** The path parameters of a template: `/v1/hosts/{fqdn}/tokens` → `{ fqdn: string }`. */
export type PathParams<P extends string> = P extends `${string}{${infer N}}${infer Rest}`
  ? Record<N, string> & PathParams<Rest>
  : Record<never, string>;

/** An operation as written in the table: its handler sees the body of its schema and the parameters of its path. */
type OperationSpec<P extends string, S> = Omit<Operation, 'path' | 'body' | 'handle'> & {
  path: P;
  body?: S;
  handle(admin: AdminService, req: ApiRequest<ValueOf<S>, PathParams<P>>): Promise<ApiResult>;
};

/** No body: the handler's `body` is an empty object. */
type NoBody = { type: 'object'; properties: Record<never, JsonSchema>; required: [] };

/**
 * One operation of the table, its handler typed from its path and body schema. The one
 * assertion of the API: the server calls `handle` only with a body ajv has validated against
 * `body` and the parameters `pathMatcher(path)` names (server.ts).
 */
function operation<const P extends string, const S extends JsonSchema = NoBody>(spec: OperationSpec<P, S>): Operation {
  const { handle } = spec;
  return { ...spec, handle: (admin, req) => handle(admin, req as ApiRequest<ValueOf<S>, PathParams<P>>) };
}

const str = (description: string, extra: JsonSchema = {}) => ({ type: 'string' as const, description, ...extra });
const nullable = (schema: JsonSchema): JsonSchema => ({ oneOf: [schema, { type: 'null' }] });
function object<const P extends Record<string, JsonSchema>, const R extends readonly string[] = []>(
  properties: P,
  required?: R,
): { type: 'object'; properties: P; required: R[number][]; additionalProperties: false } {
  return { type: 'object', properties, required: [...(required ?? [])], additionalProperties: false };
}
const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const listOf = (name: string): JsonSchema => ({ type: 'array', items: ref(name) });

const HOST_PROPERTIES: Record<string, JsonSchema> = {
  fqdn: str('host name'),
  owner: str('account that owns it'),
  type: { enum: HOST_TYPES },
  state: { enum: HOST_STATES },
  ipv4: nullable({ type: 'string' }),
  ipv6: nullable({ type: 'string' }),
  addresses: { type: 'array', items: { type: 'string' } },
  wildcard: { type: 'boolean' },
  mx: nullable({ type: 'string' }),
  backmx: { type: 'boolean' },
  txt: {
    type: 'array',
    items: { type: 'string' },
    description: 'ACME TXT values at _acme-challenge.<fqdn>, oldest first',
  },
  updatedAt: nullable({ type: 'integer', description: 'milliseconds since the epoch' }),
  link: nullable(
    object({ parent: str('the host whose IPv6 prefix it follows'), iid: str('its interface identifier') }, [
      'parent',
      'iid',
    ]),
  ),
  prefix: nullable(str('the last delegated IPv6 prefix its updates carried (its linked hosts follow it)')),
};

/** The named schemas of the document (components.schemas); responses refer to them. */
export const SCHEMAS: Record<string, JsonSchema> = {
  Account: object(
    {
      name: str('account name (the update login)'),
      donator: { type: 'boolean' },
      createdAt: { type: 'integer', description: 'milliseconds since the epoch' },
    },
    ['name', 'donator', 'createdAt'],
  ),
  AccountDetail: object(
    {
      name: str('account name'),
      donator: { type: 'boolean' },
      createdAt: { type: 'integer' },
      hosts: { type: 'array', items: { type: 'string' } },
    },
    ['name', 'donator', 'createdAt', 'hosts'],
  ),
  Host: object(
    {
      ...HOST_PROPERTIES,
      lastRequestAt: nullable({
        type: 'integer',
        description: 'with quietFor only: the last request the frequency rule counted (ms since the epoch)',
      }),
    },
    Object.keys(HOST_PROPERTIES),
  ),
  HostDetail: object(
    {
      ...HOST_PROPERTIES,
      repair: nullable(
        object(
          {
            dueAt: { type: 'integer', description: 'milliseconds since the epoch' },
            failedRepublishes: { type: 'integer' },
            inProgress: { type: 'boolean' },
          },
          ['dueAt', 'failedRepublishes', 'inProgress'],
        ),
      ),
      lastRequest: nullable(
        object(
          {
            at: { type: 'integer', description: 'when it was admitted (milliseconds since the epoch)' },
            reply: nullable(str('its reply in dyndns2 words, whatever the dialect; null: in flight or interrupted')),
            userAgent: str('the client’s User-Agent (at most 200 characters)'),
            source: str('the client’s address'),
          },
          ['at', 'reply', 'userAgent', 'source'],
        ),
      ),
      requests24h: object(
        {
          good: { type: 'integer' },
          nochg: { type: 'integer' },
          refused: { type: 'integer', description: 'abuse, !active, !donator' },
          failed: { type: 'integer', description: 'dnserr, 911' },
        },
        ['good', 'nochg', 'refused', 'failed'],
      ),
    },
    [...Object.keys(HOST_PROPERTIES), 'repair', 'lastRequest', 'requests24h'],
  ),
  HostState: object({ fqdn: { type: 'string' }, state: { enum: SETTABLE_HOST_STATES } }, ['fqdn', 'state']),
  HostLink: object(
    { fqdn: { type: 'string' }, parent: { type: 'string' }, iid: str('the interface identifier, canonical') },
    ['fqdn', 'parent', 'iid'],
  ),
  Token: object(
    {
      id: str('token id (12 hex digits; not a secret)'),
      host: { type: 'string' },
      account: { type: 'string' },
      created: { type: 'string', format: 'date-time' },
      expires: nullable({ type: 'string', format: 'date-time' }),
      lastUsed: nullable({ type: 'string', format: 'date-time' }),
      from: { type: 'array', items: { type: 'string' } },
      note: { type: 'string' },
      acmeOnly: { type: 'boolean', description: 'it may set and clear ACME TXT values only' },
      tsig: nullable({ enum: [...TSIG_ALGORITHMS], description: 'a TSIG key of the RFC 2136 gateway: its algorithm' }),
    },
    ['id', 'host', 'account', 'created', 'expires', 'lastUsed', 'from', 'note', 'acmeOnly', 'tsig'],
  ),
  NewToken: object(
    {
      id: { type: 'string' },
      token: nullable({ type: 'string', description: 'the token: shown only in this answer, never stored' }),
      key: nullable(
        object(
          {
            name: str('the TSIG key name'),
            algorithm: { enum: [...TSIG_ALGORITHMS] },
            secret: str('base64: shown only in this answer, never stored (derived from the gateway master secret)'),
            nsupdate: str('for nsupdate -y'),
            bind: str('a BIND key statement (nsupdate -k, named.conf)'),
            knot: str('a Knot key section (knsupdate -k, knot.conf)'),
          },
          ['name', 'algorithm', 'secret', 'nsupdate', 'bind', 'knot'],
        ),
      ),
      host: { type: 'string' },
      account: { type: 'string' },
      expires: nullable({ type: 'string', format: 'date-time' }),
      from: { type: 'array', items: { type: 'string' } },
      note: { type: 'string' },
      acmeOnly: { type: 'boolean' },
      tsig: nullable({ enum: [...TSIG_ALGORITHMS] }),
    },
    ['id', 'token', 'key', 'host', 'account', 'expires', 'from', 'note', 'acmeOnly', 'tsig'],
  ),
  AgentBlock: object({ pattern: { type: 'string' }, source: { enum: ['config', 'redis'] } }, ['pattern', 'source']),
  Error: object(
    {
      error: str('stable error code, e.g. ERR_NOT_FOUND'),
      message: str('what went wrong, for a person'),
      field: str('the request field at fault, when one is'),
    },
    ['error', 'message'],
  ),
};

const password = str('the update password (1 to 1024 characters)', { minLength: 1, maxLength: 1024 });

const hostChange = (change: HostStateChange, summary: string): Operation =>
  operation({
    method: 'POST',
    path: `/v1/hosts/{fqdn}/${change}`,
    operationId: `${change}Host`,
    summary,
    success: { status: 200, schema: ref('HostState'), description: 'the host and its new state' },
    errors: [404, 409],
    handle: async (admin, req) => ({ status: 200, body: await admin.setHostState(req.params.fqdn, change) }),
  });

export const OPERATIONS: readonly Operation[] = [
  operation({
    method: 'POST',
    path: '/v1/accounts',
    operationId: 'createAccount',
    summary: 'Create an account (the login of updates)',
    body: object(
      {
        name: str(ACCOUNT_NAME_RULE, { pattern: ACCOUNT_NAME_PATTERN.source }),
        password,
        donator: { type: 'boolean' },
      },
      ['name', 'password'],
    ),
    success: { status: 201, schema: ref('Account'), description: 'the account' },
    errors: [409],
    handle: async (admin, req) => ({
      status: 201,
      body: await admin.addAccount({
        name: req.body.name,
        password: req.body.password,
        donator: req.body.donator === true,
      }),
    }),
  }),
  operation({
    method: 'GET',
    path: '/v1/accounts',
    operationId: 'listAccounts',
    summary: 'Every account, by name',
    success: { status: 200, schema: listOf('Account'), description: 'the accounts' },
    errors: [],
    handle: async (admin) => ({ status: 200, body: await admin.listAccounts() }),
  }),
  operation({
    method: 'GET',
    path: '/v1/accounts/{name}',
    operationId: 'getAccount',
    summary: 'One account and its hosts',
    success: { status: 200, schema: ref('AccountDetail'), description: 'the account' },
    errors: [404],
    handle: async (admin, req) => ({ status: 200, body: await admin.showAccount(req.params.name) }),
  }),
  operation({
    method: 'DELETE',
    path: '/v1/accounts/{name}',
    operationId: 'deleteAccount',
    summary: 'Remove an account that owns no hosts',
    success: { status: 204, description: 'removed' },
    errors: [404, 409],
    handle: async (admin, req) => {
      await admin.removeAccount(req.params.name);
      return { status: 204 };
    },
  }),
  operation({
    method: 'PUT',
    path: '/v1/accounts/{name}/password',
    operationId: 'setAccountPassword',
    summary: 'Set the update password (logins with the old one fail at once)',
    body: object({ password }, ['password']),
    success: { status: 204, description: 'changed' },
    errors: [404],
    handle: async (admin, req) => {
      await admin.setPassword(req.params.name, req.body.password);
      return { status: 204 };
    },
  }),
  operation({
    method: 'PUT',
    path: '/v1/accounts/{name}/donator',
    operationId: 'setAccountDonator',
    summary: 'Mark the account as a donator (shorter update interval) or not',
    body: object({ donator: { type: 'boolean' } }, ['donator']),
    success: { status: 204, description: 'changed' },
    errors: [404],
    handle: async (admin, req) => {
      await admin.setDonator(req.params.name, req.body.donator);
      return { status: 204 };
    },
  }),
  operation({
    method: 'POST',
    path: '/v1/hosts',
    operationId: 'createHost',
    summary: 'Register a host name under a configured zone for an account',
    body: object(
      {
        fqdn: str('the host name'),
        account: str('the owner'),
        type: { enum: HOST_TYPES, default: DEFAULT_HOST_TYPE },
      },
      ['fqdn', 'account'],
    ),
    success: { status: 201, schema: ref('Host'), description: 'the host' },
    errors: [404, 409],
    handle: async (admin, req) => ({
      status: 201,
      body: await admin.addHost({
        fqdn: req.body.fqdn,
        account: req.body.account,
        type: req.body.type,
      }),
    }),
  }),
  operation({
    method: 'GET',
    path: '/v1/hosts',
    operationId: 'listHosts',
    summary: 'Every host, or one account’s',
    query: {
      account: 'only the hosts of this account',
      quietFor: 'only hosts with no request for this long: 12h, 30d, 8w',
    },
    success: { status: 200, schema: listOf('Host'), description: 'the hosts, by name' },
    errors: [404],
    handle: async (admin, req) => ({
      status: 200,
      body: await admin.listHosts(req.query.get('account') ?? undefined, {
        quietFor: req.query.get('quietFor') ?? undefined,
      }),
    }),
  }),
  operation({
    method: 'GET',
    path: '/v1/hosts/{fqdn}',
    operationId: 'getHost',
    summary: 'One host: its state, addresses, settings and any repair due',
    success: { status: 200, schema: ref('HostDetail'), description: 'the host' },
    errors: [404],
    handle: async (admin, req) => ({ status: 200, body: await admin.showHost(req.params.fqdn) }),
  }),
  operation({
    method: 'DELETE',
    path: '/v1/hosts/{fqdn}',
    operationId: 'deleteHost',
    summary: 'Delete the host’s records from DNS, then the host',
    query: { keepDns: '`true`: leave its DNS records as they are' },
    success: { status: 204, description: 'removed' },
    errors: [404, 409, 502, 503],
    handle: async (admin, req) => {
      await admin.removeHost(req.params.fqdn, { keepDns: req.query.get('keepDns') === 'true' });
      return { status: 204 };
    },
  }),
  hostChange('block', 'Block the host: updates get `abuse` until it is unblocked'),
  hostChange('unblock', 'Unblock a blocked host'),
  hostChange('close', 'Close the host: updates get `nohost` until it is reopened'),
  hostChange('reopen', 'Reopen a closed host'),
  operation({
    method: 'POST',
    path: '/v1/hosts/{fqdn}/link',
    operationId: 'linkHost',
    summary: 'The host follows another’s IPv6 prefix: its AAAA is that prefix and its interface identifier',
    body: object(
      {
        to: str('the host whose prefix it follows: same account, dynamic, following none itself'),
        iid: str('the interface identifier, at most 64 bits: ::1234:5678:9abc:def0'),
      },
      ['to', 'iid'],
    ),
    success: { status: 200, schema: ref('HostLink'), description: 'the link' },
    errors: [404, 409],
    handle: async (admin, req) => ({
      status: 200,
      body: await admin.linkHost(req.params.fqdn, { to: req.body.to, iid: req.body.iid }),
    }),
  }),
  operation({
    method: 'DELETE',
    path: '/v1/hosts/{fqdn}/link',
    operationId: 'unlinkHost',
    summary: 'The host follows no prefix any more (its AAAA stays until its next change)',
    success: { status: 204, description: 'unlinked' },
    errors: [404],
    handle: async (admin, req) => {
      await admin.unlinkHost(req.params.fqdn);
      return { status: 204 };
    },
  }),
  operation({
    method: 'POST',
    path: '/v1/hosts/{fqdn}/tokens',
    operationId: 'createToken',
    summary: 'A scoped update token for the host; the token is in this answer only',
    body: object({
      expires: str('a duration: 90m, 12h, 30d, 8w'),
      from: {
        description: 'CIDR blocks it may be used from (a list, or comma-separated text)',
        oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
      },
      note: str('a note for the operator (at most 200 characters)'),
      acmeOnly: { type: 'boolean', description: 'the token may set and clear ACME TXT values and nothing else' },
      tsig: { type: 'boolean', description: 'a TSIG key of the RFC 2136 gateway instead of an HTTP token' },
      algorithm: { enum: [...TSIG_ALGORITHMS], description: 'the TSIG key algorithm (default hmac-sha256)' },
    }),
    success: { status: 201, schema: ref('NewToken'), description: 'the token' },
    errors: [404, 409],
    handle: async (admin, req) => {
      const made = await admin.addToken(req.params.fqdn, {
        expires: req.body.expires,
        from: req.body.from,
        note: req.body.note,
        acmeOnly: req.body.acmeOnly === true,
        ...(req.body.tsig === true ? { tsig: req.body.algorithm ?? 'hmac-sha256' } : {}),
      });
      const v = tokenView(made.record);
      return {
        status: 201,
        body: {
          id: v.id,
          token: made.key === undefined ? made.token : null,
          key: made.key === undefined ? null : { ...made.key, ...keySnippets(made.key) },
          tsig: v.tsig,
          host: v.host,
          account: v.account,
          expires: v.expires,
          from: v.from,
          note: v.note,
          acmeOnly: v.acmeOnly,
        },
      };
    },
  }),
  operation({
    method: 'GET',
    path: '/v1/hosts/{fqdn}/tokens',
    operationId: 'listTokens',
    summary: 'The host’s tokens (never the tokens themselves)',
    success: { status: 200, schema: listOf('Token'), description: 'the tokens' },
    errors: [404],
    handle: async (admin, req) => ({
      status: 200,
      body: (await admin.listTokens(req.params.fqdn, { requireHost: true })).map(tokenView),
    }),
  }),
  operation({
    method: 'DELETE',
    path: '/v1/tokens/{id}',
    operationId: 'deleteToken',
    summary: 'Revoke a token',
    success: { status: 204, description: 'revoked' },
    errors: [404],
    handle: async (admin, req) => {
      await admin.removeToken(req.params.id);
      return { status: 204 };
    },
  }),
  operation({
    method: 'GET',
    path: '/v1/agents/blocked',
    operationId: 'listBlockedAgents',
    summary: 'The blocked User-Agent patterns: the config file’s, then Redis’',
    success: { status: 200, schema: listOf('AgentBlock'), description: 'the patterns' },
    errors: [],
    handle: async (admin) => ({ status: 200, body: await admin.listBlockedAgents() }),
  }),
  operation({
    method: 'POST',
    path: '/v1/agents/blocked',
    operationId: 'blockAgent',
    summary: 'Block a User-Agent (exact, or a * glob): its updates get `badagent`',
    body: object({ pattern: str('the User-Agent, or a glob with *', { minLength: 1, maxLength: 512 }) }, ['pattern']),
    success: { status: 201, schema: ref('AgentBlock'), description: 'blocked (also when it was already)' },
    errors: [],
    handle: async (admin, req) => {
      const { pattern } = req.body;
      await admin.blockAgent(pattern);
      return { status: 201, body: { pattern, source: 'redis' } };
    },
  }),
  operation({
    method: 'DELETE',
    path: '/v1/agents/blocked/{agent}',
    operationId: 'unblockAgent',
    summary: 'Unblock a User-Agent pattern (URL-encoded in the path)',
    success: { status: 204, description: 'unblocked' },
    errors: [404, 409],
    handle: async (admin, req) => {
      await admin.unblockAgent(req.params.agent);
      return { status: 204 };
    },
  }),
];

/** An operation's path template as a matcher: `/v1/hosts/{fqdn}` → names and a RegExp. */
export function pathMatcher(template: string): { names: string[]; pattern: RegExp } {
  const names: string[] = [];
  const source = template
    .split('/')
    .map((part) => {
      const m = /^\{(\w+)\}$/.exec(part);
      if (!m) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(m[1]!);
      return '([^/]+)';
    })
    .join('/');
  return { names, pattern: new RegExp(`^${source}$`) };
}

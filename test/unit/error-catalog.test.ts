/** One catalog of error codes (src/core/errors.ts): the admin replies and the OpenAPI document read it. */
import { expect } from 'chai';
import { errorReply } from '../../src/admin/server.js';
import { errorDescription, openApiDocument } from '../../src/admin/openapi.js';
import { BridgeError, ERROR_CATALOG, type ErrorCode, type ServiceErrorCode } from '../../src/core/errors.js';

const CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];
const EXCHANGE: readonly ErrorCode[] = [
  'ERR_UNAUTHORIZED',
  'ERR_METHOD_NOT_ALLOWED',
  'ERR_PAYLOAD_TOO_LARGE',
  'ERR_UNSUPPORTED_MEDIA_TYPE',
  'ERR_INTERNAL',
];

describe('core/errors: ERROR_CATALOG', () => {
  it('gives every code an error status (4xx, 5xx) and a public text of its own', () => {
    expect(CODES).to.include.members(EXCHANGE);
    for (const code of CODES) {
      const { status, text } = ERROR_CATALOG[code];
      expect(Number.isInteger(status) && status >= 400 && status <= 599, code).to.equal(true);
      expect(text, code).to.match(/^\S.*\S$/);
      expect(text, code).to.not.match(/ERR_/);
    }
    const texts = CODES.map((c) => ERROR_CATALOG[c].text);
    expect(new Set(texts).size).to.equal(texts.length);
  });

  it('the admin listener answers each error the service raises with its catalog status', () => {
    for (const code of CODES.filter((c) => !EXCHANGE.includes(c)) as ServiceErrorCode[]) {
      const reply = errorReply(new BridgeError(code, `a ${code} happened`));
      expect(reply.status, code).to.equal(ERROR_CATALOG[code].status);
      expect(reply.body, code).to.deep.equal({ error: code, message: `a ${code} happened` });
    }
    expect(errorReply(new Error('a bug'))).to.deep.equal({
      status: ERROR_CATALOG.ERR_INTERNAL.status,
      body: { error: 'ERR_INTERNAL', message: ERROR_CATALOG.ERR_INTERNAL.text },
    });
  });

  it("the OpenAPI document's error descriptions are the catalog's text and code of each error of that status", () => {
    const doc = openApiDocument('0.0.0') as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
    };
    let seen = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          seen++;
          const codes = CODES.filter((c) => ERROR_CATALOG[c].status === Number(status));
          expect(codes.length, `${method} ${path} ${status}`).to.be.greaterThan(0);
          const parts = response.description.split('; ');
          expect(parts, `${method} ${path} ${status}`).to.deep.equal(
            codes.map((c) => `${ERROR_CATALOG[c].text} (${c})`),
          );
        }
      }
    }
    expect(seen).to.be.greaterThan(50);
    expect(errorDescription(502)).to.include('(ERR_DNS_TIMEOUT)').and.include('(ERR_DNS_TSIG)');
    expect(() => errorDescription(418)).to.throw(/no error code answers 418/);
  });
});

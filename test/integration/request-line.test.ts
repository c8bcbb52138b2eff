/**
 * Request lines node's parser refuses before any route sees them, against a real `serve` process: methods it does not
 * know (docs/protocol.md, "The update request": other methods 405) and raw non-ASCII bytes in the target (400,
 * documented: clients must percent-encode; a POST body may be raw UTF-8).
 */
import { expect } from 'chai';
import { BridgeEnv, ZONE, expectedReply } from '../support/bridge.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';

const AUTH: [string, string] = ['lina', 'lina-pw'];
const UA = 'request-line-test/1.0';
const AUTH_HEADER = `Authorization: Basic ${Buffer.from(AUTH.join(':')).toString('base64')}`;
const METHOD_NOT_ALLOWED = expectedReply(405, 'Method Not Allowed', 'method not allowed\n', ['Allow: GET, POST']);

describe('request lines refused by the HTTP parser (knot)', function () {
  this.timeout(30000);
  let env: BridgeEnv;
  const host = `line-${process.pid}.${ZONE}`;
  // `bücher-<pid>` as punycode: what the bridge stores and publishes.
  const idn = `bücher-${process.pid}.${ZONE}`;
  const idnAscii = new URL(`http://${idn}/`).hostname;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({ kind: 'knot', config: { frequency: { minInterval: 0.001 } } });
    await env.addAccount(...AUTH);
    await env.addHost(host, AUTH[0]);
    await env.addHost(idnAscii, AUTH[0]);
  });
  after(async () => env?.stop());

  it('unknown and lowercase methods get the same 405 (with Allow) as known wrong ones, and change nothing', async () => {
    const before = await env.cliOk(['host', 'show', host, '--json']);
    for (const method of ['PUT', 'FOO', 'get', 'Post', 'PROPFIND']) {
      const request = [
        `${method} /nic/update?hostname=${host}&myip=192.0.2.41 HTTP/1.1`,
        'Host: x',
        `User-Agent: ${UA}`,
        AUTH_HEADER,
        '',
        '',
      ].join('\r\n');
      expect((await env.raw(request)).toString('latin1'), method).to.equal(METHOD_NOT_ALLOWED);
    }
    expect(await env.cliOk(['host', 'show', host, '--json'])).to.equal(before);
    expect(await env.ns.query(host, 'A')).to.deep.equal([]);
  });

  it('raw UTF-8 in the request target is refused with 400 and changes nothing; the same name raw in a POST body is good', async () => {
    const before = await env.cliOk(['host', 'show', idnAscii, '--json']);
    const serialBefore = await env.ns.serial();
    // What curl sends for a typed `ü`: the UTF-8 bytes as they are.
    const get = Buffer.from(
      [
        `GET /nic/update?hostname=${idn}&myip=192.0.2.42 HTTP/1.1`,
        'Host: x',
        `User-Agent: ${UA}`,
        AUTH_HEADER,
        '',
        '',
      ].join('\r\n'),
      'utf8',
    );
    expect((await env.raw(get)).toString('latin1')).to.equal(expectedReply(400, 'Bad Request', 'bad request\n'));
    expect(await env.cliOk(['host', 'show', idnAscii, '--json'])).to.equal(before);
    expect(await env.ns.serial()).to.equal(serialBefore);

    const body = Buffer.from(`hostname=${idn}&myip=192.0.2.42`, 'utf8');
    const head = [
      'POST /nic/update HTTP/1.1',
      'Host: x',
      `User-Agent: ${UA}`,
      AUTH_HEADER,
      'Content-Type: application/x-www-form-urlencoded',
    ];
    const post = Buffer.concat([Buffer.from([...head, `Content-Length: ${body.length}`, '', ''].join('\r\n')), body]);
    expect((await env.raw(post)).toString('latin1')).to.equal(expectedReply(200, 'OK', 'good 192.0.2.42\n'));
    expect(await env.ns.query(idnAscii, 'A')).to.deep.equal(['192.0.2.42']);
  });
});

/**
 * Generated hostile requests against a real `serve` process: every reply must be a valid
 * token (or a 4xx) with the exact framing of docs/protocol.md, "The reply", the process must stay up with bounded
 * memory, and nothing may change in Redis or DNS. The count is bounded (HOSTILE_REQUESTS).
 */
import { expect } from 'chai';
import net from 'node:net';
import { BridgeEnv, ZONE } from '../support/bridge.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { mulberry32 } from '../support/prng.js';

const TOTAL = Number(process.env.HOSTILE_REQUESTS ?? 100000);
const CONCURRENCY = 32;
const TOKENS =
  /^(good|nochg) [0-9a-f.:,]+\n$|^(badauth|badagent|numhost|911|notfqdn|nohost|!yours|badsys|!active|abuse|!donator|dnserr)\n$/;

function generator(seed: number, host: string, creds: string) {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const junkBytes = (n: number) =>
    Array.from(
      { length: n },
      () =>
        '%' +
        Math.floor(rnd() * 256)
          .toString(16)
          .padStart(2, '0'),
    ).join('');
  const values = [
    () => host,
    () => `${host},${host}`,
    () => 'a'.repeat(64) + '.' + ZONE,
    () => Array.from({ length: 1000 }, (_, i) => `h${i}.${ZONE}`).join(','),
    () => `x%00y.${ZONE}`,
    () => `x%0d%0aSet-Cookie:%20a=b.${ZONE}`,
    () => junkBytes(1 + Math.floor(rnd() * 40)),
    () => '%ff%fe%fd',
    () => '203.0.113.' + Math.floor(rnd() * 300),
    () => '2001:db8::/56',
    () => '::ffff:1.2.3.4',
    () => '%',
    () => '',
    () => 'ON',
    () => 'YES',
    () => 'x'.repeat(Math.floor(rnd() * 3000)),
  ];
  const names = [
    'hostname',
    'myip',
    'myipv6',
    'wildcard',
    'mx',
    'backmx',
    'offline',
    'system',
    'junk',
    '',
    '%00',
    'hostname',
  ];
  const query = () =>
    Array.from({ length: Math.floor(rnd() * 6) }, () => `${pick(names)}=${pick(values)()}`).join(
      pick(['&', '&', '&', ';', '&&']),
    );
  const paths = [
    '/dyndns/update',
    '/nic/update',
    '/v3/update',
    '/checkip',
    '/nope',
    '/dyndns/update/',
    '//nic/update',
    '*',
    'http://x/nic/update',
    '/nic/update%00',
  ];
  const auths = [
    () => `Authorization: Basic ${creds}`,
    () => `Authorization: Basic ${Buffer.from('nocolon').toString('base64')}`,
    () => 'Authorization: Basic !!!!',
    () => 'Authorization: Basic',
    () => `Authorization: Basic ${Buffer.from('u:' + 'p'.repeat(5000)).toString('base64')}`,
    () => 'Authorization: Digest x',
    () => `Authorization: Basic ${creds}\r\nAuthorization: Basic ${Buffer.from('evil:x').toString('base64')}`,
    () => '',
  ];
  const agents = [
    'User-Agent: fuzz/1.0',
    'User-Agent: ',
    '',
    'User-Agent: Company - Device - Version Number',
    `User-Agent: ${'u'.repeat(4000)}`,
    'User-Agent: a\x01b',
  ];
  const one = (): Buffer => {
    const shape = rnd();
    if (shape < 0.03)
      return Buffer.from(Array.from({ length: Math.floor(rnd() * 200) }, () => Math.floor(rnd() * 256)));
    const method = pick(['GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'HEAD', 'DELETE', 'G\x00T', 'OPTIONS']);
    const version = pick(['HTTP/1.1', 'HTTP/1.0', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9']);
    const headers = [pick(['Host: x', '', 'Host: 127.0.0.1:1', 'Host: a\r\nHost: b']), pick(auths)(), pick(agents)];
    let body = '';
    if (method === 'POST') {
      body = rnd() < 0.1 ? 'x'.repeat(5000 + Math.floor(rnd() * 5000)) : query();
      headers.push(pick(['Content-Type: application/x-www-form-urlencoded', 'Content-Type: text/plain', '']));
      headers.push(rnd() < 0.9 ? `Content-Length: ${Buffer.byteLength(body)}` : 'Transfer-Encoding: chunked');
      if (headers[headers.length - 1]!.startsWith('Transfer'))
        body = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    }
    if (rnd() < 0.05) headers.push(`X-Big: ${'b'.repeat(9000)}`);
    const head = `${method} ${pick(paths)}?${query()} ${version}\r\n${headers.filter(Boolean).join('\r\n')}\r\n\r\n`;
    return Buffer.from(head + body, 'latin1');
  };
  // Sometimes a second request pipelined behind the first on the same connection.
  return (): Buffer => (rnd() < 0.05 ? Buffer.concat([one(), one()]) : one());
}

function send(port: number, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = net.connect({ host: '127.0.0.1', port });
    s.setTimeout(20000, () => s.destroy());
    s.on('connect', () => s.end(bytes));
    s.on('data', (d) => chunks.push(d));
    s.on('error', () => undefined);
    s.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/** Check one reply's framing; returns a description of what is wrong, or undefined. */
export function framingProblem(raw: Buffer, head = false): string | undefined {
  if (raw.length === 0) return undefined; // the server may drop unparsable garbage
  const text = raw.toString('latin1');
  const sep = text.indexOf('\r\n\r\n');
  if (sep === -1) return 'no header end';
  const [status, ...headers] = text.slice(0, sep).split('\r\n');
  const m = /^HTTP\/1\.0 (\d{3}) [A-Za-z ]+$/.exec(status!);
  if (!m) return `bad status line ${JSON.stringify(status)}`;
  const expected = ['Content-Type: text/plain; charset=utf-8', /^Content-Length: \d+$/, 'Connection: close'];
  for (const [i, e] of expected.entries()) {
    const h = headers[i] ?? '';
    if (typeof e === 'string' ? h !== e : !e.test(h)) return `header ${i} is ${JSON.stringify(h)}`;
  }
  const extra = headers.slice(3);
  for (const h of extra)
    if (!/^(WWW-Authenticate: Basic realm="[^"]*"|Allow: GET, POST|Retry-After: (3600|1\d))$/.test(h))
      return `unexpected header ${JSON.stringify(h)}`;
  const body = raw.subarray(Buffer.byteLength(text.slice(0, sep + 4), 'latin1'));
  const declared = Number(/^Content-Length: (\d+)$/.exec(headers[1]!)![1]);
  // A HEAD reply announces the body's length and sends no body.
  // (Requests that did not parse get the client-error reply with its body: 400/408/414/431.)
  const code = Number(m[1]);
  if (head && ![400, 408, 414, 431].includes(code)) return body.length === 0 ? undefined : 'body after a HEAD reply';
  if (declared !== body.length) return 'Content-Length mismatch';
  if (code === 200 || code === 401) {
    const lines = body.toString('utf8').split(/(?<=\n)/);
    if (code === 401 && body.toString() !== 'badauth\n') return '401 without badauth';
    for (const l of lines)
      if (!TOKENS.test(l) && !/^Current IP Address: [0-9a-f.:]+\n$/.test(l))
        return `bad body line ${JSON.stringify(l)}`;
  } else if (code < 400 || code > 499) return `status ${code}`;
  return undefined;
}

describe('hostile input (generated requests against a real serve process)', function () {
  this.timeout(300000);
  let env: BridgeEnv;
  const fqdn = `fuzz.${ZONE}`;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({
      kind: 'knot',
      config: { log: { level: 'info' }, junk: { threshold: 1000000 }, credentials: { maxFailures: 1000000 } },
    });
    await env.addAccount('fuzzer', 'fuzz-pw');
    await env.addHost(fqdn, 'fuzzer');
    await env.cliOk(['host', 'close', fqdn]); // a closed host: no request can change it
  });
  after(async () => env?.stop());

  it(`answers ${TOTAL} generated requests with valid framing, stays up, changes nothing`, async () => {
    const seed = Number(process.env.HOSTILE_SEED ?? Date.now() % 100000);
    const next = generator(seed, fqdn, Buffer.from('fuzzer:fuzz-pw').toString('base64'));
    // The host as stored: its request log counts the fuzzer's requests (refused: the host is closed), by design.
    const hostState = async () => {
      const {
        lastRequest: _l,
        requests24h: _c,
        ...rest
      } = JSON.parse(await env.cliOk(['host', 'show', fqdn, '--json'])) as Record<string, unknown>;
      return rest;
    };
    const dbBefore = await hostState();
    const serialBefore = await env.ns.serial();
    const problems: string[] = [];
    let sent = 0;
    let answered = 0;
    const statuses = new Map<string, number>();
    const worker = async () => {
      while (sent < TOTAL) {
        sent++;
        const req = next();
        const reply = await send(env.port, req);
        const problem = framingProblem(reply, req.subarray(0, 5).toString('latin1') === 'HEAD ');
        if (reply.length > 0) {
          answered++;
          const key = reply.toString('latin1', 9, 12);
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
        }
        if (problem && problems.length < 10)
          problems.push(`${problem} for ${JSON.stringify(req.toString('latin1').slice(0, 200))}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    expect(problems, `seed ${seed}`).to.deep.equal([]);
    // only raw garbage may go unanswered (about 3 % of the generated requests)
    expect(answered, JSON.stringify([...statuses])).to.be.above(TOTAL * 0.9);
    expect(statuses.get('200') ?? 0, JSON.stringify([...statuses])).to.be.above(TOTAL * 0.03);
    console.log(`      status mix: ${JSON.stringify([...statuses].sort())}`);
    expect(env.serves[0]!.exitCode).to.equal(null);
    expect(await hostState()).to.deep.equal(dbBefore);
    expect(await env.ns.serial()).to.equal(serialBefore);
    // still answering, and the memory of the serve process is bounded
    const r = await env.get('/checkip');
    expect(r.status).to.equal(200);
    const status = await import('node:fs/promises').then((fs) =>
      fs.readFile(`/proc/${env.serves[0]!.pid}/status`, 'utf8'),
    );
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
    expect(rssKb).to.be.below(300 * 1024);
  });
});

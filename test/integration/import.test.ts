/**
 * `ddns-bridge host import`: the real CLI against a real redis-server (and a serve process
 * to prove imported hosts update like added ones). Checks the report, the exit status and
 * the exact Redis state (same fields as `host add`, the owner's host count).
 */
import { expect } from 'chai';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { BridgeEnv, ZONE, runCli } from '../support/bridge.js';
import { requireBinariesOrSkip } from '../../src/lab/index.js';

const UA = 'ddns-bridge-tests/1.0 tests@example.test';

describe('host import (bulk registration)', function () {
  this.timeout(120000);
  let env: BridgeEnv;
  let redis: Redis;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'dig']);
    env = await BridgeEnv.start({ kind: 'knot', config: { frequency: { minInterval: 0.01 } } });
    await env.addAccount('alice', 'alice-secret-pw');
    await env.addAccount('bob', 'bob-secret-pw');
    redis = new Redis(env.redis.url);
  });
  after(async () => {
    redis?.disconnect();
    await env?.stop();
  });

  const hostFields = (fqdn: string) => redis.hgetall(`ddns:h:${fqdn}`);
  const hostCount = async (account: string) => Number((await redis.hget(`ddns:a:${account}`, 'n')) ?? 0);

  it('imports valid lines, reports each rejected line by number, exits 1, and never overwrites', async () => {
    await env.addHost(`taken.${ZONE}`, 'bob');
    const before = await hostFields(`taken.${ZONE}`);
    const lines = [
      '# migrated from the old provider', //                   1 comment
      `one.${ZONE} alice`, //                                   2 ok (dynamic)
      '', //                                                    3 blank
      `  TWO.${ZONE}.   alice   static  # trailing comment`, // 4 ok, normalised
      `bad_name.${ZONE} alice`, //                              5 invalid name
      'www.example.org alice', //                               6 outside the zones
      `${ZONE} alice`, //                                       7 apex
      `three.${ZONE} alice cname`, //                           8 unknown type
      `four.${ZONE} nobody`, //                                 9 unknown account
      `taken.${ZONE} alice`, //                                10 exists (bob's)
      `one.${ZONE} bob`, //                                    11 duplicate in the file
      `five.${ZONE}`, //                                       12 too few fields
      `six.${ZONE} bob webhop extra`, //                       13 too many fields
      `seven.${ZONE} bob webhop`, //                           14 ok
    ];
    const file = path.join(env.dir, 'hosts.txt');
    await writeFile(file, lines.join('\n') + '\n');
    const r = await env.cli(['host', 'import', file]);
    expect(r.code).to.equal(1);
    expect(r.stdout).to.equal('imported 3, unchanged 0, rejected 9\n');
    expect(r.stderr.trimEnd().split('\n')).to.deep.equal([
      `line 5: not a valid host name: "bad_name.${ZONE}"`,
      `line 6: www.example.org is not below any configured zone (${ZONE})`,
      `line 7: ${ZONE} is a zone apex: only names below it can be hosts`,
      'line 8: unknown type "cname" (one of dynamic, static, webhop, subdomain)',
      'line 9: no such account: nobody',
      `line 10: host taken.${ZONE} already exists (owner bob, type dynamic); left unchanged`,
      `line 11: host one.${ZONE} already exists (owner alice, type dynamic); left unchanged`,
      'line 12: expected "FQDN ACCOUNT [TYPE]", got 1 field',
      'line 13: expected "FQDN ACCOUNT [TYPE]", got 4 fields',
    ]);
    expect(await hostFields(`one.${ZONE}`)).to.deep.equal({ o: 'alice', t: 'dynamic', s: 'active' });
    expect(await hostFields(`two.${ZONE}`)).to.deep.equal({ o: 'alice', t: 'static', s: 'active' });
    expect(await hostFields(`seven.${ZONE}`)).to.deep.equal({ o: 'bob', t: 'webhop', s: 'active' });
    expect(await hostFields(`taken.${ZONE}`)).to.deep.equal(before);
    expect(
      await redis.exists(`ddns:h:three.${ZONE}`, `ddns:h:four.${ZONE}`, `ddns:h:five.${ZONE}`, `ddns:h:six.${ZONE}`),
    ).to.equal(0);
    // Same fields as `host add` writes, and the owners' counts follow.
    expect(Object.keys(before).sort()).to.deep.equal(['o', 's', 't']);
    expect(await hostCount('alice')).to.equal(2);
    expect(await hostCount('bob')).to.equal(2);

    // Run again with the bad lines fixed (dropped): what is there already is unchanged, exit 0.
    const fixed = [lines[1], lines[3], lines[13], `eight.${ZONE} alice`].join('\n');
    const again = await env.cli(['host', 'import', '-'], fixed);
    expect(again.code).to.equal(0, again.stderr);
    expect(again.stdout).to.equal('imported 1, unchanged 3, rejected 0\n');
    expect(again.stderr).to.equal('');
    expect(await hostCount('alice')).to.equal(3);
    expect(await hostCount('bob')).to.equal(2);
    expect(await hostFields(`two.${ZONE}`)).to.deep.equal({ o: 'alice', t: 'static', s: 'active' });
    // The same name with another type is a conflict, not a re-run.
    const other = await env.cli(['host', 'import', '-'], `two.${ZONE} alice dynamic\n`);
    expect(other.code).to.equal(1);
    expect(other.stderr).to.equal(
      `line 1: host two.${ZONE} already exists (owner alice, type static); left unchanged\n`,
    );
    expect(await hostFields(`two.${ZONE}`)).to.deep.equal({ o: 'alice', t: 'static', s: 'active' });
  });

  it('reads stdin with `-`, exits 0 when every line is imported, and the hosts update like added ones', async () => {
    const names = Array.from({ length: 5 }, (_, i) => `stdin-${i}.${ZONE}`);
    const r = await env.cli(['host', 'import', '-'], names.map((n) => `${n} alice`).join('\r\n'));
    expect(r.code).to.equal(0, r.stderr);
    expect(r.stdout).to.equal('imported 5, unchanged 0, rejected 0\n');
    expect(r.stderr).to.equal('');
    expect(await hostCount('alice')).to.equal(8);
    const shown = await env.hostJson(names[0]!);
    expect(shown).to.include({ owner: 'alice', type: 'dynamic', state: 'active' });
    const reply = await env.get(`/dyndns/update?hostname=${names[0]}&myip=192.0.2.77`, {
      auth: ['alice', 'alice-secret-pw'],
      ua: UA,
    });
    expect(reply.body).to.equal('good 192.0.2.77\n');
    expect(await env.ns.query(names[0]!, 'A')).to.deep.equal(['192.0.2.77']);
  });

  it('keeps the host count consistent: the account cannot be removed until its imported hosts are', async () => {
    await env.addAccount('carol', 'carol-secret-pw');
    const r = await env.cli(['host', 'import', '-'], `c1.${ZONE} carol\nc2.${ZONE} carol\n`);
    expect(r.code).to.equal(0, r.stderr);
    expect((await env.cli(['account', 'remove', 'carol'])).code).to.equal(1);
    await env.cliOk(['host', 'remove', `c1.${ZONE}`, '--keep-dns']);
    await env.cliOk(['host', 'remove', `c2.${ZONE}`, '--keep-dns']);
    expect(await hostCount('carol')).to.equal(0);
    await env.cliOk(['account', 'remove', 'carol']);
  });

  it('imports 50,000 lines across many batches with exact counts', async () => {
    await env.addAccount('bulk', 'bulk-secret-pw');
    const n = 50000;
    const text = Array.from({ length: n }, (_, i) => `bulk-${i}.${ZONE} bulk`).join('\n');
    const file = path.join(env.dir, 'bulk.txt');
    await writeFile(file, text + `\nbulk-7.${ZONE} bulk\nbulk-8.${ZONE} bulk static\n`);
    const r = await env.cli(['host', 'import', file]);
    expect(r.stdout).to.equal(`imported ${n}, unchanged 1, rejected 1\n`);
    expect(r.stderr).to.equal(
      `line ${n + 2}: host bulk-8.${ZONE} already exists (owner bulk, type dynamic); left unchanged\n`,
    );
    expect(await hostCount('bulk')).to.equal(n);
    expect(await redis.hgetall(`ddns:h:bulk-${n - 1}.${ZONE}`)).to.deep.equal({ o: 'bulk', t: 'dynamic', s: 'active' });
  });

  it('a missing file is a clear error with exit 1', async () => {
    const r = await runCli(['host', 'import', path.join(env.dir, 'nope.txt'), '--config', env.configPath]);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/cannot read .*nope\.txt: ENOENT/);
  });
});

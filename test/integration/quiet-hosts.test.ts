/**
 * Quiet hosts through the running service (docs/operators.md, "Quiet hosts"): the real sweep, redis-server and the
 * CLI. A host with no request is listed by `host list --quiet-for` and closed past `hosts.closeQuietAfter` with one
 * log line; a host that updates stays; `host reopen` makes a closed one active and quiet from then.
 */
import { expect } from 'chai';
import { requireBinariesOrSkip } from '../../src/lab/index.js';
import { BridgeEnv, ZONE } from '../support/bridge.js';
import { waitFor } from '../support/wait.js';

describe('quiet hosts (knotd)', function () {
  this.timeout(60000);
  let env: BridgeEnv;
  const quiet = `quiet.${ZONE}`;
  const busy = `busy.${ZONE}`;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server', 'knotd', 'kdig']);
    env = await BridgeEnv.start({
      config: {
        hosts: { quietSweepInterval: 0.3, closeQuietAfter: 3 },
        frequency: { minInterval: 0.001, donatorMinInterval: 0.001 },
      },
    });
    await env.addAccount('quser', 'quser-password-1');
    await env.addHost(quiet, 'quser');
    await env.addHost(busy, 'quser');
  });
  after(async () => {
    await env?.stop();
  });

  it('lists the quiet host, closes it past closeQuietAfter with one log line; the busy one stays; reopen works', async () => {
    const update = () =>
      env.get(`/nic/update?hostname=${busy}&myip=192.0.2.90`, { auth: ['quser', 'quser-password-1'] });
    expect((await update()).body).to.match(/^(good|nochg) 192\.0\.2\.90\n$/);
    // Keep the busy host busy while the quiet one ages past 3 s.
    await waitFor(
      async () => {
        await update();
        return (await env.hostJson(quiet)).state === 'closed';
      },
      { what: 'the quiet host closed by the sweep', timeoutMs: 20000 },
    );
    expect((await env.hostJson(busy)).state).to.equal('active');
    const closedLines = env.logs
      .join('')
      .split('\n')
      .filter((l) => l.includes('"msg":"closed a quiet host"'));
    expect(closedLines.length).to.equal(1);
    expect(closedLines[0]).to.include(`"fqdn":"${quiet}"`);
    // The quiet one is listed with no request yet; the busy one (updated a moment ago) has its last request shown.
    const listed = JSON.parse(await env.cliOk(['host', 'list', '--quiet-for', '2s', '--json'])) as {
      fqdn: string;
      lastRequestAt: number | null;
    }[];
    expect(listed.find((h) => h.fqdn === quiet)?.lastRequestAt).to.equal(null);
    expect(listed.every((h) => h.fqdn === quiet || h.lastRequestAt !== null)).to.equal(true);
    const text = await env.cliOk(['host', 'list', '--quiet-for', '2s']);
    expect(text).to.match(
      new RegExp(`^${quiet.replace(/\./g, '\\.')}\\tquser\\tdynamic\\tclosed\\t-\\tno request yet$`, 'm'),
    );
    await env.cliOk(['host', 'reopen', quiet]);
    expect((await env.hostJson(quiet)).state).to.equal('active');
    expect(await env.cliOk(['host', 'list', '--quiet-for', '1h'])).to.equal('');
    const bad = await env.cli(['host', 'list', '--quiet-for', 'soon']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.include('--quiet-for');
  });
});

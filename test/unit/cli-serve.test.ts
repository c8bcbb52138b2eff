import { expect } from 'chai';
import {
  hashesPerWorker,
  MAX_AUTO_WORKERS,
  MAX_WORKERS,
  WORKER_SEMI_SPACE_MIB,
  workerCount,
  workerExecArgv,
  needsIpv6Only,
  portOverride,
  updateQuotaWarnings,
} from '../../src/cli/commands/serve.js';
import { UsageError } from '../../src/cli/context.js';

describe('serve --workers', () => {
  it('defaults to one process; takes a count as yargs passes it (a string) or as a number', () => {
    expect(workerCount(undefined, 8)).to.equal(1);
    expect(workerCount('1', 8)).to.equal(1);
    expect(workerCount('3', 8)).to.equal(3);
    expect(workerCount(2, 8)).to.equal(2);
    expect(workerCount(String(MAX_WORKERS), 8)).to.equal(MAX_WORKERS);
  });

  it("'auto' is one worker per CPU the process may use, at most 8", () => {
    expect(MAX_AUTO_WORKERS).to.equal(8);
    expect(workerCount('auto', 2)).to.equal(2);
    expect(workerCount('auto', 1)).to.equal(1);
    expect(workerCount('auto', 8)).to.equal(8);
    expect(workerCount('auto', 64)).to.equal(8);
    // An explicit count may go higher.
    expect(workerCount('64', 2)).to.equal(64);
  });

  it('refuses anything else with a usage error that names the value', () => {
    for (const bad of ['0', '-1', '1.5', 'two', '', ' 2', 'AUTO', String(MAX_WORKERS + 1), '0x2', 0, 1.5, NaN]) {
      expect(() => workerCount(bad, 2), JSON.stringify(bad))
        .to.throw(UsageError, /--workers: expected 'auto' or a whole number from 1 to 256/)
        .with.property('message')
        .that.includes(JSON.stringify(bad));
    }
  });

  it('password checks per process: about one per CPU in all, at least one, at most two', () => {
    expect(hashesPerWorker(1, 1)).to.equal(1);
    expect(hashesPerWorker(1, 2)).to.equal(2);
    expect(hashesPerWorker(1, 16)).to.equal(2);
    expect(hashesPerWorker(2, 2)).to.equal(1); // --workers auto on two CPUs
    expect(hashesPerWorker(2, 4)).to.equal(2);
    expect(hashesPerWorker(8, 2)).to.equal(1);
  });

  it("workers get a bounded young generation unless the operator's options choose one", () => {
    const bound = `--max-semi-space-size=${WORKER_SEMI_SPACE_MIB}`;
    expect(WORKER_SEMI_SPACE_MIB).to.equal(8);
    expect(workerExecArgv([], undefined)).to.deep.equal([bound]);
    expect(workerExecArgv(['--enable-source-maps'], '')).to.deep.equal(['--enable-source-maps', bound]);
    // The operator's choice stays, in either spelling, on the command line or in NODE_OPTIONS.
    expect(workerExecArgv(['--max-semi-space-size=32'], undefined)).to.deep.equal(['--max-semi-space-size=32']);
    expect(workerExecArgv(['--max_semi_space_size', '4'], undefined)).to.deep.equal(['--max_semi_space_size', '4']);
    expect(workerExecArgv([], '--trace-gc --max-semi-space-size=2')).to.deep.equal([]);
    // A similar-looking option is not a choice of this one.
    expect(workerExecArgv([], '--max-old-space-size=512')).to.deep.equal([bound]);
  });

  it('an IPv6 wildcard is IPv6-only exactly when an IPv4 address listens on the same port', () => {
    const l = (host: string, port: number) => ({ host, port });
    const pair = [l('0.0.0.0', 8245), l('::', 8245)];
    expect(pair.map((x) => needsIpv6Only(x, pair))).to.deep.equal([false, true]);
    const alone = [l('::', 8245)];
    expect(needsIpv6Only(alone[0]!, alone), '[::] alone keeps serving IPv4 too').to.equal(false);
    const apart = [l('0.0.0.0', 8245), l('::', 8246)];
    expect(needsIpv6Only(apart[1]!, apart)).to.equal(false);
    const specific = [l('192.0.2.1', 53), l('::', 53), l('::1', 53)];
    expect(specific.map((x) => needsIpv6Only(x, specific))).to.deep.equal([false, true, true]);
    const ephemeral = [l('127.0.0.1', 0), l('::1', 0)];
    expect(ephemeral.map((x) => needsIpv6Only(x, ephemeral))).to.deep.equal([false, false]);
  });
});

describe('serve --port', () => {
  it('takes a whole number from 0 to 65535 (as yargs passes it, a string), or nothing', () => {
    expect(portOverride(undefined)).to.equal(undefined);
    expect(portOverride('0')).to.equal(0);
    expect(portOverride('8245')).to.equal(8245);
    expect(portOverride('65535')).to.equal(65535);
    expect(portOverride(8080)).to.equal(8080);
  });

  it('refuses anything else with a usage error that names the value', () => {
    for (const bad of ['abc', '70000', '65536', '-1', '1.5', '', ' 80', '0x50', '8e3', NaN, -1, 70000, 1.5]) {
      expect(() => portOverride(bad), JSON.stringify(bad))
        .to.throw(UsageError, /--port: expected a whole number from 0 to 65535/)
        .with.property('message')
        .that.includes(JSON.stringify(bad));
    }
  });
});

describe('serve: UPDATEs in flight against BIND update-quota', () => {
  const zone = (name: string, primary: string, maxInFlight?: number) => {
    const [host, port] = primary.split(':') as [string, string];
    return {
      name,
      primary: { host, port: Number(port) },
      key: { name: 'k', algorithm: 'hmac-sha256' as const, secret: Buffer.alloc(32) },
      staticNames: [],
      ...(maxInFlight ? { maxInFlight } : {}),
    };
  };
  const dns = { ttl: 60, timeoutMs: 3000, maxInFlight: 4, fudge: 300, clockOffsetSeconds: 0 };

  it('sums every zone of one primary over the workers; warns past 100 only, naming the primary and its zones', () => {
    const config = {
      dns,
      zones: [
        zone('a.example', '192.0.2.53:53'),
        zone('b.example', '192.0.2.53:53', 10),
        zone('c.example', '192.0.2.54:53', 1),
      ],
    };
    expect(updateQuotaWarnings(config, 7)).to.deep.equal([]); // (4 + 10) × 7 = 98
    expect(updateQuotaWarnings(config, 8)).to.deep.equal([
      'up to 112 UPDATE messages at once to 192.0.2.53:53 (a.example, b.example: maxInFlight × 8 worker(s)): if it is BIND, raise its update-quota (default 100) above that, or lower maxInFlight',
    ]);
  });
});

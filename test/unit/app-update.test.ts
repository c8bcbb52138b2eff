/**
 * The update use case's reply when some hosts of a request hit a store fault, on in-memory
 * ports (the Redis scripts and real primaries behind them are covered by store-hosts, faults
 * and update-e2e): `911` for the request, except a host another frontend held past a lease
 * beside a host that was changed, which is that host's `dnserr`.
 */
import { expect } from 'chai';
import type {
  Admission,
  AdmitRequest,
  CommitOutcome,
  GuardCheck,
  HostChange,
  HostGate,
  Lease,
} from '../../src/app/ports.js';
import { UpdateService, type UpdateReply, type UpdateRequest } from '../../src/app/update.js';
import { hostReply, requestReply } from '../../src/core/outcomes.js';
import type { Logger } from '../../src/core/log.js';
import { emptyDnsState, type AddressFamilies, type HostRecord } from '../../src/core/types.js';

const ZONE = 'dyn.example.org';
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const ALICE = { name: 'alice', donator: false };

/** How each host's admit and commit behave; unnamed hosts change and commit normally. */
interface Script {
  busy?: Set<string>;
  commit?: Map<string, CommitOutcome | 'throws'>;
  /** The families admit says a change writes (else those the request names). */
  families?: Map<string, AddressFamilies>;
  /** Hosts whose admission finds a login check failing (a password changed meanwhile…). */
  refused?: Map<string, GuardCheck>;
  /** Every admission's guard, as the store received it. */
  guards?: (AdmitRequest['guard'] | undefined)[];
  /** The authenticator's calls, in order (`authenticate`, `recordMalformed`). */
  logins?: string[];
}

function hostsWith(script: Script): Pick<HostGate, 'admit' | 'commit' | 'release'> & { commits: string[] } {
  const commits: string[] = [];
  return {
    commits,
    async admit(req: AdmitRequest): Promise<Admission> {
      script.guards?.push(req.guard);
      const refused = script.refused?.get(req.fqdn);
      if (refused !== undefined) return { kind: 'refused', check: refused };
      if (script.busy?.has(req.fqdn)) return { kind: 'busy' };
      const host: HostRecord = {
        ...emptyDnsState(),
        fqdn: req.fqdn,
        account: 'alice',
        type: 'dynamic',
        state: 'active',
        updatedAt: 1,
      };
      // As the store does for a host with no lease before: the families the request names.
      const families = script.families?.get(req.fqdn) ?? {
        ipv4: req.expect?.ipv4 !== undefined,
        ipv6: req.expect?.ipv6 !== undefined,
      };
      return { kind: 'change', host, lease: { fqdn: req.fqdn, token: 't' }, repairDue: false, families };
    },
    async commit(lease: Lease): Promise<CommitOutcome> {
      const outcome = script.commit?.get(lease.fqdn) ?? 'committed';
      if (outcome === 'throws') throw new Error('redis: commit failed: Command timed out');
      if (outcome === 'committed') commits.push(lease.fqdn);
      return outcome;
    },
    async release(): Promise<void> {},
  };
}

async function update(
  hostnames: string[],
  script: Script,
  request: Partial<UpdateRequest> = {},
): Promise<{ reply: UpdateReply; commits: string[]; changes: HostChange[] }> {
  const hosts = hostsWith(script);
  const changes: HostChange[] = [];
  const service = new UpdateService({
    authenticator: {
      authenticate: async () => {
        script.logins?.push('authenticate');
        return { ok: true, account: ALICE, login: { account: ALICE, hashDigest: 'digest-of-alice' } };
      },
      recordMalformed: async () => void script.logins?.push('recordMalformed'),
      recall: () => undefined, // the full path: several host names
      recalledAndAdmitted: () => undefined,
    },
    tokens: { login: async () => undefined, check: async () => 'ok', forget: () => undefined },
    clientPolicy: { isBlocked: async () => false, listVerdict: () => 'allowed', recordJunk: async () => undefined },
    hosts: hosts as unknown as HostGate,
    registry: { get: async () => undefined },
    publisher: {
      zoneFor: () => ZONE,
      publish: async (c: HostChange) => void changes.push(c),
      recentlyUnreachable: () => false,
    },
    mxResolver: { resolves: async () => true },
    frequency: { minIntervalMs: 60_000, donatorMinIntervalMs: 15_000, maxFrequent: 3 },
    leaseMs: 30,
    logger: quiet,
    sleep: async () => undefined,
  });
  const params = new Map([
    ['hostname', [hostnames.map((h) => `${h}.${ZONE}`).join(',')]],
    ['myip', ['192.0.2.1']],
  ]);
  const reply = await service.update({
    credentials: { user: 'alice', password: 'pw' },
    userAgent: 'tests/1.0',
    clientIp: '192.0.2.9',
    params,
    ...request,
  });
  return { reply, commits: hosts.commits, changes };
}

/** The reply as the client reads it: the tokens the one outcome map gives. */
const tokens = (r: UpdateReply) =>
  r.kind === 'request' ? requestReply(r.outcome).token : r.lines.map((l) => hostReply(l.outcome).token).join(' ');

describe('app: update replies when a host hits a store fault', () => {
  it('a host another frontend held past a lease, beside a changed host: good for that one, dnserr for the held one', async () => {
    const { reply, commits } = await update(['a', 'b'], { busy: new Set([`b.${ZONE}`]) });
    expect(tokens(reply)).to.equal('good dnserr');
    expect(commits).to.deep.equal([`a.${ZONE}`]);
  });

  it('the held host alone, or beside no changed host: 911', async () => {
    expect(tokens((await update(['b'], { busy: new Set([`b.${ZONE}`]) })).reply)).to.equal('911');
    const both = new Set([`a.${ZONE}`, `b.${ZONE}`]);
    expect(tokens((await update(['a', 'b'], { busy: both })).reply)).to.equal('911');
  });

  it('a failed or lost commit beside a changed host: 911 (the host may have changed; dnserr would promise it did not)', async () => {
    for (const outcome of ['throws', 'lost'] as const) {
      const { reply, commits } = await update(['a', 'b'], { commit: new Map([[`b.${ZONE}`, outcome]]) });
      expect(tokens(reply), outcome).to.equal('911');
      expect(commits, outcome).to.deep.equal([`a.${ZONE}`]);
    }
  });
});

describe('app: update leaves the families nobody writes', () => {
  it('an IPv4 request leaves an AAAA the store does not know; one taking over a change that wrote both rewrites both', async () => {
    const plain = await update(['a'], {});
    expect(plain.changes.map((c) => c.leave)).to.deep.equal([{ ipv4: false, ipv6: true }]);
    const takeover = await update(['a'], { families: new Map([[`a.${ZONE}`, { ipv4: true, ipv6: true }]]) });
    expect(tokens(takeover.reply)).to.equal('good');
    expect(takeover.changes.map((c) => c.leave)).to.deep.equal([{ ipv4: false, ipv6: false }]);
  });
});

describe('app: the full path checks the login again at each admission', () => {
  it('every admission carries the guard of the verified login: the stored-hash digest only', async () => {
    const guards: Script['guards'] = [];
    await update(['a', 'b'], { guards });
    expect(guards).to.deep.equal(
      [0, 1].map(() => ({
        sourceIp: '192.0.2.9',
        userAgent: 'tests/1.0',
        login: { account: ALICE, hashDigest: 'digest-of-alice' },
        passwordOnly: true,
      })),
    );
  });

  it('a password changed after the check refuses the whole request, even beside a changed host', async () => {
    for (const [check, token] of [
      ['stale', 'badauth'],
      ['login', 'badauth'],
      ['agent', 'badagent'],
    ] as const) {
      const { reply } = await update(['a', 'b'], { refused: new Map([[`b.${ZONE}`, check]]) });
      expect(tokens(reply), check).to.equal(token);
    }
  });
});

describe('app: tokensOnly (DuckDNS) never takes an account password', () => {
  it('credentials that are no token: badauth, counted as malformed ones, no password checked, nothing changed', async () => {
    const logins: string[] = [];
    const { reply, commits } = await update(['a', 'b'], { logins }, { tokensOnly: true });
    expect(tokens(reply)).to.equal('badauth');
    expect(logins).to.deep.equal(['recordMalformed']);
    expect(commits).to.deep.equal([]);
    // One name: not the fast path's unverified admission either.
    const one: string[] = [];
    expect(tokens((await update(['a'], { logins: one }, { tokensOnly: true })).reply)).to.equal('badauth');
    expect(one).to.deep.equal(['recordMalformed']);
    // Without it the same password is checked (two names: the full path) and updates the hosts.
    const plain: string[] = [];
    expect(tokens((await update(['a', 'b'], { logins: plain })).reply)).to.equal('good good');
    expect(plain).to.deep.equal(['authenticate']);
  });
});

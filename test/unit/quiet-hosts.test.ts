/** The quiet-host sweep (docs/operators.md, "Quiet hosts") over a fake store: counts by age, closing, the lock. */
import { expect } from 'chai';
import { QuietHosts, type HostActivity, type QuietSweepStore } from '../../src/app/quiet.js';
import { isQuietFor, quietSince } from '../../src/core/quiet.js';
import type { HostState } from '../../src/core/types.js';

const DAY = 86_400_000;
const NOW = 1_800_000_000_000;

function store(hosts: HostActivity[], locked = false) {
  const saved: Record<string, number>[] = [];
  const s: QuietSweepStore = {
    take: () => Promise.resolve(!locked),
    activity: () => Promise.resolve(hosts),
    saveCounts: (c) => {
      saved.push({ ...c });
      return Promise.resolve();
    },
    counts: () => Promise.resolve(saved.at(-1) ?? {}),
  };
  return { s, saved };
}

function job(s: QuietSweepStore, closeAfterMs?: number) {
  const closed: string[] = [];
  const lines: unknown[] = [];
  const quiet = new QuietHosts({
    store: s,
    hosts: {
      setState: (fqdn: string, state: string) => {
        expect(state).to.equal('closed');
        closed.push(fqdn);
        return Promise.resolve();
      },
    },
    settings: { intervalMs: 1000, ...(closeAfterMs === undefined ? {} : { closeAfterMs }) },
    logger: { debug() {}, info: (...a: unknown[]) => lines.push(a), warn() {}, error() {} },
    now: () => NOW,
  });
  return { quiet, closed, lines };
}

const host = (fqdn: string, daysQuiet: number, state: HostState = 'active'): HostActivity => ({
  fqdn,
  state,
  since: NOW - daysQuiet * DAY,
});

describe('quiet hosts', () => {
  it('quiet since the last counted request, else since it was added; unknown: not quiet', () => {
    expect(quietSince({ lastRequestAt: 5, createdAt: 1 })).to.equal(5);
    expect(quietSince({ createdAt: 1 })).to.equal(1);
    expect(isQuietFor({}, 0, NOW)).to.equal(false);
    expect(isQuietFor({ createdAt: NOW - 2 * DAY }, DAY, NOW)).to.equal(true);
  });

  it('a sweep counts the hosts quiet at least 1, 7, 30 and 90 days', async () => {
    const { s, saved } = store([host('a', 0.5), host('b', 2), host('c', 8), host('d', 31), host('e', 100)]);
    await job(s).quiet.sweep();
    expect(saved).to.deep.equal([{ '1d': 4, '7d': 3, '30d': 2, '90d': 1 }]);
  });

  it('closeQuietAfter closes active and offline hosts quiet that long, one log line each; never blocked ones', async () => {
    const { s } = store([
      host('a', 1),
      host('b', 40),
      host('c', 40, 'offline'),
      host('d', 40, 'blocked'),
      host('e', 40, 'closed'),
    ]);
    const { quiet, closed, lines } = job(s, 30 * DAY);
    await quiet.sweep();
    expect(closed).to.deep.equal(['b', 'c']);
    expect(lines).to.have.length(2);
  });

  it('another process holds the lock: nothing counted, nothing closed', async () => {
    const { s, saved } = store([host('b', 40)], true);
    const { quiet, closed } = job(s, DAY);
    await quiet.sweep();
    expect([saved, closed]).to.deep.equal([[], []]);
  });
});

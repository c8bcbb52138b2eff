/** The propagation watcher (app/propagation.ts) over a fake SerialProbe, and RFC 1982 serial arithmetic. */
import { expect } from 'chai';
import { PropagationWatcher, type Secondary, type SerialProbe } from '../../src/app/propagation.js';
import { serialDistance, serialReached, serialsBehind } from '../../src/core/serial.js';

describe('core/serial (RFC 1982)', () => {
  it('compares across the wrap, and leaves exactly half the space undefined', () => {
    expect(serialDistance(5, 3)).to.equal(2);
    expect(serialDistance(3, 5)).to.equal(-2);
    expect(serialDistance(1, 0xffffffff)).to.equal(2);
    expect(serialReached(1, 0xffffffff)).to.equal(true);
    expect(serialReached(0xffffffff, 1)).to.equal(false);
    expect(serialDistance(2 ** 31, 0)).to.equal(undefined);
    expect(serialReached(2 ** 31, 0)).to.equal(false);
    expect(serialsBehind(0xfffffffe, 3)).to.equal(5);
    expect(serialsBehind(7, 3)).to.equal(0);
  });
});

class FakeProbe implements SerialProbe {
  primary = 10;
  /** Serials the primary serves before `primary` (an inline-signing primary's lag after an update). */
  primaryLag: number[] = [];
  served = new Map<string, number | 'down'>();
  primaryQueries = 0;
  constructor(public list: Secondary[]) {
    for (const s of list) this.served.set(s.name, 10);
  }
  primarySerial(): Promise<number> {
    this.primaryQueries++;
    return Promise.resolve(this.primaryLag.shift() ?? this.primary);
  }
  secondarySerial(_zone: string, s: Secondary): Promise<number> {
    const v = this.served.get(s.name);
    return v === 'down' || v === undefined ? Promise.reject(new Error('down')) : Promise.resolve(v);
  }
  secondaries(): Promise<readonly Secondary[]> {
    return Promise.resolve(this.list);
  }
}

const until = async (cond: () => boolean, what: string) => {
  const end = Date.now() + 3000;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('app/propagation: the watcher', () => {
  const a: Secondary = { name: '192.0.2.1:53', host: '192.0.2.1', port: 53 };
  const b: Secondary = { name: '192.0.2.2:53', host: '192.0.2.2', port: 53 };
  const timings = { firstPollMs: 5, maxPollMs: 20, boundMs: 400, checkIntervalMs: 60_000, queryTimeoutMs: 100 };

  it('one primary query for the messages of a moment; each secondary observed once it serves the serial', async () => {
    const probe = new FakeProbe([a, b]);
    const seen: [string, number][] = [];
    const states = new Map<string, [boolean, number]>();
    const w = new PropagationWatcher(
      ['dyn.example'],
      probe,
      {
        secondaryPropagated: (_z, s, seconds) => seen.push([s, seconds]),
        secondaryState: (_z, s, up, behind) => states.set(s, [up, behind]),
        secondaryRemoved: () => undefined,
      },
      timings,
    );
    probe.primary = 11;
    for (let i = 0; i < 5; i++) w.published('dyn.example');
    w.published('other.example'); // not watched
    await until(() => states.size === 2, 'both secondaries asked');
    expect(probe.primaryQueries).to.be.at.most(2);
    expect(states.get(a.name)).to.deep.equal([true, 1]);
    probe.served.set(a.name, 11);
    await until(() => seen.length === 1, 'a to catch up');
    expect(seen[0]![0]).to.equal(a.name);
    expect(states.get(a.name)).to.deep.equal([true, 0]);
    expect(states.get(b.name)).to.deep.equal([true, 1]);
    probe.served.set(b.name, 'down');
    await until(() => states.get(b.name)?.[0] === false, 'b seen down');
    probe.served.set(b.name, 12); // ahead of the target: reached too
    await until(() => seen.length === 2, 'b to catch up');
    expect(w.statuses().map((s) => [s.secondary, s.up, s.behind])).to.deep.equal([
      [a.name, true, 0],
      [b.name, true, 0],
    ]);
    w.stop();
  });

  it('gives up past the bound (nothing observed), and the periodic check still reports it behind', async () => {
    const probe = new FakeProbe([a]);
    const seen: number[] = [];
    const w = new PropagationWatcher(
      ['dyn.example'],
      probe,
      {
        secondaryPropagated: (_z, _s, t) => seen.push(t),
        secondaryState: () => undefined,
        secondaryRemoved: () => undefined,
      },
      { ...timings, boundMs: 50 },
    );
    probe.primary = 20;
    w.published('dyn.example');
    await until(() => w.statuses()[0]?.behind === 10, 'the secondary behind');
    await new Promise((r) => setTimeout(r, 120));
    probe.served.set(a.name, 20);
    const after = await w.checkAll();
    expect(after[0]).to.include({ up: true, behind: 0, serial: 20, primarySerial: 20 });
    expect(seen, 'given up on: no propagation time').to.deep.equal([]);
    w.stop();
  });

  it('a primary that serves its new serial a moment after the UPDATE (inline signing): that serial is followed', async () => {
    const probe = new FakeProbe([a]);
    const seen: number[] = [];
    const w = new PropagationWatcher(
      ['dyn.example'],
      probe,
      {
        secondaryPropagated: (_z, _s, t) => seen.push(t),
        secondaryState: () => undefined,
        secondaryRemoved: () => undefined,
      },
      timings,
    );
    await w.checkAll(); // the primary's serial known: 10
    probe.primary = 11;
    probe.primaryLag = [10, 10];
    w.published('dyn.example');
    await until(() => w.statuses()[0]?.primarySerial === 11, 'the new serial followed');
    expect(w.statuses()[0]!.behind).to.equal(1);
    expect(seen, 'not observed as reached at the old serial').to.deep.equal([]);
    probe.served.set(a.name, 11);
    await until(() => seen.length === 1, 'the secondary reaching it');
    w.stop();
  });

  it('a secondary gone from the list (auto): its series removed, its polls stopped', async () => {
    const probe = new FakeProbe([a, b]);
    const removed: string[] = [];
    const w = new PropagationWatcher(
      ['dyn.example'],
      probe,
      {
        secondaryPropagated: () => undefined,
        secondaryState: () => undefined,
        secondaryRemoved: (_z, s) => removed.push(s),
      },
      timings,
    );
    await w.checkAll();
    probe.list = [a];
    expect((await w.checkAll()).map((s) => s.secondary)).to.deep.equal([a.name]);
    expect(removed).to.deep.equal([b.name]);
    w.stop();
  });
});

/** core/request-log: the stored hour tallies read back, and the day's counts (docs/operators.md). */
import { expect } from 'chai';
import { countsOverDay, HOUR_MS, parseTallies, recordedAgent } from '../../src/core/request-log.js';

describe('core/request-log', () => {
  const now = 500_000 * HOUR_MS + 1234;
  it('parses the current hour and the earlier ones, skipping what is malformed', () => {
    const current = { hour: '500000', good: '1', nochg: '2', refused: '3', failed: '4' };
    expect(parseTallies(current, '499990 0 5 0 0,junk,499999 1 0 0 0')).to.deep.equal([
      { hour: 499990, good: 0, nochg: 5, refused: 0, failed: 0 },
      { hour: 499999, good: 1, nochg: 0, refused: 0, failed: 0 },
      { hour: 500000, good: 1, nochg: 2, refused: 3, failed: 4 },
    ]);
    expect(parseTallies({}, undefined)).to.deep.equal([]);
    expect(parseTallies({ hour: 'x' }, '1 2 3')).to.deep.equal([]);
    expect(parseTallies({ hour: '7', nochg: '2' }, '')).to.deep.equal([
      { hour: 7, good: 0, nochg: 2, refused: 0, failed: 0 },
    ]);
  });

  it('counts the current hour and the 23 before it; an hour of Redis’s clock ahead of ours is counted', () => {
    const tallies = parseTallies({ hour: '500001', good: '1' }, '499976 9 9 9 9,499977 0 1 0 0,500000 2 0 1 1');
    expect(countsOverDay(tallies, now)).to.deep.equal({ good: 3, nochg: 1, refused: 1, failed: 1 });
    expect(countsOverDay([], now)).to.deep.equal({ good: 0, nochg: 0, refused: 0, failed: 0 });
  });

  it('keeps a User-Agent to 200 characters', () => {
    expect(recordedAgent('a'.repeat(250))).to.have.length(200);
    expect(recordedAgent('ddclient/3.10')).to.equal('ddclient/3.10');
  });
});

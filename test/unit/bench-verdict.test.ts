import { expect } from 'chai';
import { median } from '../../bench/verdict.js';

describe('bench: verdict', () => {
  it('median: the middle value, the mean of the two middle ones for an even count, order-free', () => {
    expect(median([3])).to.equal(3);
    expect(median([5, 1, 3])).to.equal(3);
    expect(median([4, 1, 3, 2])).to.equal(2.5);
    expect(median([0.62, 0.53, 0.62])).to.equal(0.62);
  });
});

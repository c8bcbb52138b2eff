/** For tests whose serve uses redis.url …/1: an update after the trouble lands in database 1. */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { ZONE, expectedReply, type BridgeEnv } from './bridge.js';

/**
 * A new account and host `label`.ZONE, one update to `ip`: answered good, the A on the
 * primary, the address recorded in database 1, and database 0 still empty.
 */
export async function expectUpdateInDatabase1(env: BridgeEnv, label: string, ip: string, ua: string): Promise<void> {
  const h = `${label}.${ZONE}`;
  const auth: [string, string] = [label, `${label}-pw-123456`];
  await env.addAccount(...auth);
  await env.addHost(h, label);
  const r = await env.get(`/nic/update?hostname=${h}&myip=${ip}`, { auth, ua });
  expect(r.raw.toString()).to.equal(expectedReply(200, 'OK', `good ${ip}\n`));
  expect(await env.ns.query(h, 'A')).to.deep.equal([ip]);
  const db0 = new Redis(env.redis.url.replace(/\/\d*$/, '/0'));
  const db1 = new Redis(env.redis.url.replace(/\/\d*$/, '/1'));
  try {
    expect(await db1.hget(`ddns:h:${h}`, '4'), 'recorded in database 1').to.equal(ip);
    expect(await db0.dbsize(), 'database 0 stays empty').to.equal(0);
  } finally {
    db0.disconnect();
    db1.disconnect();
  }
}

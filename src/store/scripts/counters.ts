/** The counters with a TTL: failed logins and junk replies (strike), the address echo's rule. */
import { ECHO_FIELDS as EF } from '../keys.js';
import { NOW } from '../lua.js';
import { defineScript, replyInteger, replyOneOf } from '../script.js';

/** A counter and the marker (cool-down, block) set when it reaches the threshold. */
export interface StrikePair {
  counter: string;
  marker: string;
}

/**
 * strike(KEYS: counter, marker [, counter, marker]…; ARGV: threshold, windowMs, markMs)
 * → number of markers set. Counts one event per counter within the window; reaching the
 * threshold sets the marker (cool-down / block) for markMs and starts the count afresh.
 */
export const STRIKE = defineScript({
  name: 'ddnsStrike',
  lua: `
local threshold = tonumber(ARGV[1])
local marked = 0
for i = 1, #KEYS, 2 do
  local n = redis.call('INCR', KEYS[i])
  if n == 1 or redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
  if n >= threshold then
    redis.call('SET', KEYS[i + 1], '1', 'PX', ARGV[3])
    redis.call('DEL', KEYS[i])
    marked = marked + 1
  end
end
return marked
`,
  keys: (k: { pairs: readonly StrikePair[] }) => k.pairs.flatMap((p) => [p.counter, p.marker]),
  args: (a: { threshold: number; windowMs: number; markMs: number }) => [a.threshold, a.windowMs, a.markMs],
  reply: (raw) => replyInteger(raw, 'strike'),
});

/**
 * echo(KEYS: echo hash; ARGV: minIntervalMs, maxFrequent, cooldownMs) → 'ok' | 'abuse'.
 * The host frequency rule per address; crossing it blocks the address until bu.
 */
export const ECHO = defineScript({
  name: 'ddnsEcho',
  lua: `${NOW}
local key = KEYS[1]
local minInterval = tonumber(ARGV[1])
local cooldown = tonumber(ARGV[3])
local v = redis.call('HMGET', key, '${EF.lastRequest}', '${EF.frequentCount}', '${EF.blockedUntil}')
local blockedUntil = tonumber(v[3])
if blockedUntil ~= nil and now < blockedUntil then return 'abuse' end
local last = tonumber(v[1])
local count = tonumber(v[2]) or 0
if last ~= nil and now - last < minInterval then count = count + 1 else count = 0 end
if count > tonumber(ARGV[2]) then
  redis.call('HSET', key, '${EF.lastRequest}', ms(now), '${EF.frequentCount}', '0', '${EF.blockedUntil}', ms(now + cooldown))
  redis.call('PEXPIRE', key, math.max(cooldown, minInterval))
  return 'abuse'
end
redis.call('HSET', key, '${EF.lastRequest}', ms(now), '${EF.frequentCount}', tostring(count))
redis.call('HDEL', key, '${EF.blockedUntil}')
-- Past minInterval the entry no longer matters: the next request is not frequent anyway.
redis.call('PEXPIRE', key, minInterval)
return 'ok'
`,
  numberOfKeys: 1,
  keys: (k: { echo: string }) => [k.echo],
  args: (a: { minIntervalMs: number; maxFrequent: number; cooldownMs: number }) => [
    Math.max(1, Math.floor(a.minIntervalMs)),
    a.maxFrequent,
    Math.max(1, Math.floor(a.cooldownMs)),
  ],
  reply: (raw) => replyOneOf(raw, ['ok', 'abuse'] as const, 'echo'),
});

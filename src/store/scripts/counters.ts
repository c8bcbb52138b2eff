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
  keys: [],
  keyTail: 'countersAndMarkers',
  args: ['threshold', 'windowMs', 'markMs'],
  lua: `
local limit = tonumber(threshold)
local marked = 0
for i = 1, #countersAndMarkers, 2 do
  local counter, marker = countersAndMarkers[i], countersAndMarkers[i + 1]
  local n = redis.call('INCR', counter)
  if n == 1 or redis.call('PTTL', counter) < 0 then redis.call('PEXPIRE', counter, windowMs) end
  if n >= limit then
    redis.call('SET', marker, '1', 'PX', markMs)
    redis.call('DEL', counter)
    marked = marked + 1
  end
end
return marked
`,
  encodeKeys: (k: { pairs: readonly StrikePair[] }) => ({
    countersAndMarkers: k.pairs.flatMap((p) => [p.counter, p.marker]),
  }),
  encodeArgs: (a: { threshold: number; windowMs: number; markMs: number }) => a,
  reply: (raw) => replyInteger(raw, 'strike'),
});

/**
 * echo(KEYS: echo hash; ARGV: minIntervalMs, maxFrequent, cooldownMs) → 'ok' | 'abuse'.
 * The host frequency rule per address; crossing it blocks the address until bu.
 */
export const ECHO = defineScript({
  name: 'ddnsEcho',
  preamble: NOW,
  keys: ['echo'],
  args: ['minIntervalMs', 'maxFrequent', 'cooldownMs'],
  lua: `
local key = echo
local minInterval = tonumber(minIntervalMs)
local cooldown = tonumber(cooldownMs)
local v = redis.call('HMGET', key, '${EF.lastRequest}', '${EF.frequentCount}', '${EF.blockedUntil}')
local blockedUntil = tonumber(v[3])
if blockedUntil ~= nil and now < blockedUntil then return 'abuse' end
local last = tonumber(v[1])
local count = tonumber(v[2]) or 0
if last ~= nil and now - last < minInterval then count = count + 1 else count = 0 end
if count > tonumber(maxFrequent) then
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
  encodeArgs: (a: { minIntervalMs: number; maxFrequent: number; cooldownMs: number }) => ({
    minIntervalMs: Math.max(1, Math.floor(a.minIntervalMs)),
    maxFrequent: a.maxFrequent,
    cooldownMs: Math.max(1, Math.floor(a.cooldownMs)),
  }),
  reply: (raw) => replyOneOf(raw, ['ok', 'abuse'] as const, 'echo'),
});

/**
 * The nameserver's own ceiling: a minimal TSIG UPDATE sender (the bridge's wire encoder,
 * signer and TCP transport, nothing else). `concurrency` loops each keep one message in
 * flight; a message carries `namesPerMessage` host changes with exactly the records the
 * bridge sends for an address change (planChange), so the bridge's ratio to this figure is
 * its own overhead.
 */
import type { ZoneConfig } from '../src/config/schema.js';
import { planChange, signedExchange, TcpTransport, encodeUpdate, type HostPlan } from '../src/dns/index.js';
import { emptyDnsState } from '../src/core/types.js';
import { closedLoop, summarize, type Measurement } from './stats.js';

export interface RawUpdateLoad {
  zone: ZoneConfig;
  concurrency: number;
  namesPerMessage: number;
  /** At most this many messages… */
  messages: number;
  /** …and at most this long. */
  maxSeconds: number;
  /** Owner names are `${prefix}${i}.${zone}` for i in [0, namePool): reused round-robin with fresh addresses. */
  prefix: string;
  namePool: number;
  ttl?: number;
  /** Idle time after each message before the client sends its next one (default 0: back to back). */
  pauseMs?: number;
}

/** Host updates (names) per second; latency per message. */
export async function runRawUpdates(load: RawUpdateLoad): Promise<Measurement & { messages: number }> {
  const { zone } = load;
  const transport = new TcpTransport({
    zone: zone.name,
    host: zone.primary.host,
    port: zone.primary.port,
    maxInFlight: load.concurrency,
    connectTimeoutMs: 5000,
  });
  const signing = { zone, fudge: 300, now: () => Date.now() / 1000 };
  let nameCounter = 0;
  const latencies: number[] = [];
  let okNames = 0;
  let errors = 0;
  let okMessages = 0;
  let firstError: string | undefined;
  try {
    // Connect first (one real update): the connection set-up is not what is measured.
    const warm = planChange(
      {
        fqdn: `${load.prefix}warmup.${zone.name}`,
        zone: zone.name,
        previous: emptyDnsState(),
        target: { ...emptyDnsState(), ipv4: nextAddress(), offline: false },
      },
      load.ttl ?? 60,
    );
    await signedExchange(
      transport,
      signing,
      (id) => encodeUpdate({ id, zone: zone.name, prerequisites: warm.prerequisites, updates: warm.updates }),
      10_000,
    );
    const { seconds } = await closedLoop(load.concurrency, load.messages, load.maxSeconds, async () => {
      const plans: HostPlan[] = [];
      for (let i = 0; i < load.namesPerMessage; i++) {
        const fqdn = `${load.prefix}${nameCounter++ % load.namePool}.${zone.name}`;
        const change = {
          fqdn,
          zone: zone.name,
          previous: emptyDnsState(),
          target: { ...emptyDnsState(), ipv4: nextAddress(), offline: false },
        };
        plans.push(planChange(change, load.ttl ?? 60));
      }
      const started = performance.now();
      try {
        await signedExchange(
          transport,
          signing,
          (id) =>
            encodeUpdate({
              id,
              zone: zone.name,
              prerequisites: plans.flatMap((p) => p.prerequisites),
              updates: plans.flatMap((p) => p.updates),
            }),
          10_000,
        );
        latencies.push(performance.now() - started);
        okNames += plans.length;
        okMessages++;
      } catch (err) {
        errors += plans.length;
        firstError ??= (err as Error).message;
      }
      if (load.pauseMs) await new Promise((r) => setTimeout(r, load.pauseMs));
    });
    return { ...summarize(latencies, okNames, errors, seconds, firstError), messages: okMessages };
  } finally {
    transport.close();
  }
}

let addressCounter = Math.floor(Math.random() * 0xffffff);

/**
 * A fresh IPv4 address on every call for the whole run (10.0.0.0/8 holds 16 M): a name
 * never gets the address it already has, so every update is a real change.
 */
export function nextAddress(): string {
  const v = addressCounter++ % 0xffffff;
  return `10.${(v >> 16) & 255}.${(v >> 8) & 255}.${v & 255}`;
}

/**
 * Reserve `n` addresses of the same sequence for a load that makes its own (wrk's change
 * requests: address `start + s` for its request s): nextAddress never hands them out again.
 * Returns the start.
 */
export function reserveAddresses(n: number): number {
  const start = addressCounter % 0xffffff;
  addressCounter += n;
  return start;
}

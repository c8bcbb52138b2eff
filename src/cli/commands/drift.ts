/**
 * `ddns-bridge reconcile [--zone Z] [--fix] [--json]`: compare each zone, transferred from its primary, with Redis;
 * with --fix republish the stored state of the drifted hosts and compare again. Exit 0: in agreement (after --fix:
 * the second transfer agrees), 1: drift, 2: no comparison (config, Redis, the transfer refused or not verifiable).
 * docs/operators.md, "Drift".
 */
import { secondaryStatuses } from './check.js';
import { DriftCheck, type Finding, type FixReport, type DriftReport } from '../../app/drift.js';
import { normalizeHostname } from '../../core/names.js';
import { staticNamesByZone } from '../../core/static-names.js';
import { DnsPublisher, DnsRecordPlanner, DnsZoneTransfer } from '../../dns/index.js';
import { openStore } from '../../store/index.js';
import { leaseMs } from '../compose.js';
import { UsageError, type CommandContext } from '../context.js';

export type Out = (line: string) => void;

export interface ReconcileOptions {
  zone?: string;
  fix: boolean;
  json: boolean;
}

/** Exit status when the comparison could not be made. */
export const CANNOT_COMPARE = 2;

export async function reconcile(ctx: CommandContext, opts: ReconcileOptions, out: Out, err: Out): Promise<number> {
  const configured = ctx.config.zones.map((z) => z.name);
  let zones = configured;
  if (opts.zone !== undefined) {
    const zone = normalizeHostname(opts.zone) ?? opts.zone;
    if (!configured.includes(zone))
      throw new UsageError(`reconcile: ${opts.zone} is not a configured zone (${configured.join(', ')})`);
    zones = [zone];
  }
  const store = openStore(ctx.config, ctx.logger);
  const publisher = new DnsPublisher(ctx.config.zones, ctx.config.dns, ctx.logger);
  const drift = new DriftCheck({
    hosts: store.hosts,
    publisher,
    transfer: new DnsZoneTransfer(ctx.config.zones, ctx.config.dns),
    planner: new DnsRecordPlanner(ctx.config.dns.ttl),
    leaseMs: leaseMs(ctx.config),
    staticNames: staticNamesByZone(ctx.config.zones),
  });
  try {
    const before = await drift.check(zones);
    let fix: { report: FixReport; after: DriftReport } | undefined;
    if (opts.fix && before.findings.length > 0) {
      const report = await drift.fix(before.findings);
      fix = { report, after: await drift.check(zones) };
    }
    // The secondaries beside the comparison (docs/operators.md, "Secondaries"): they never decide the exit code.
    if (opts.json)
      out(
        JSON.stringify({
          ...jsonDocument(before, fix, opts.fix),
          // Only where a compared zone lists secondaries: the document stays as it was for the others.
          ...(ctx.config.zones.some((z) => zones.includes(z.name) && z.secondaries)
            ? { secondaries: await secondaryStatuses(ctx.config, zones) }
            : {}),
        }),
      );
    else printText(before, fix, out);
    const agree = (fix?.after ?? before).findings.length === 0;
    return agree ? 0 : 1;
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (opts.json) out(JSON.stringify({ error: { code: (e as { code?: string }).code ?? 'ERR', message } }));
    err(`ddns-bridge: reconcile: ${message}`);
    return CANNOT_COMPARE;
  } finally {
    await publisher.close();
    await store.close();
  }
}

function jsonDocument(before: DriftReport, fix: { report: FixReport; after: DriftReport } | undefined, asked: boolean) {
  const doc: Record<string, unknown> = {
    agree: before.findings.length === 0,
    zones: before.zones,
    findings: before.findings,
  };
  if (asked) {
    const after = fix?.after ?? before;
    doc.fix = {
      republished: fix?.report.republished ?? [],
      failed: fix?.report.failed ?? [],
      findings: after.findings,
      agree: after.findings.length === 0,
    };
  }
  return doc;
}

/** One finding, one line: `missing   home.dyn.example.org A: 192.0.2.1`. */
export function findingLine(f: Finding): string {
  const what = `${f.kind.padEnd(9)} ${f.name} ${f.type}`;
  switch (f.kind) {
    case 'missing':
      return `${what}: ${f.redis.join(', ')}`;
    case 'extra':
      return `${what}: ${f.dns.join(', ')}`;
    case 'different':
      return f.ttl
        ? `${what}: TTL ${f.ttl.dns} in DNS, ${f.ttl.redis} from Redis`
        : `${what}: DNS ${f.dns.join(', ')}; Redis ${f.redis.join(', ')}`;
    case 'unknown':
      return `${what}: ${f.dns.join(', ')} (not registered)`;
  }
}

function summary(report: DriftReport): string {
  const zones = `${report.zones.length} zone${report.zones.length === 1 ? '' : 's'}`;
  const hosts = report.zones.reduce((n, z) => n + z.hosts, 0);
  const compared = `${zones}, ${hosts} host${hosts === 1 ? '' : 's'}`;
  const n = report.findings.length;
  return n === 0 ? `in agreement: ${compared}` : `drift: ${n} finding${n === 1 ? '' : 's'} (${compared})`;
}

function printText(before: DriftReport, fix: { report: FixReport; after: DriftReport } | undefined, out: Out): void {
  for (const f of before.findings) out(findingLine(f));
  out(summary(before));
  if (!fix) return;
  for (const host of fix.report.republished) out(`republished ${host}`);
  for (const { host, error } of fix.report.failed) out(`not fixed ${host}: ${error}`);
  for (const f of fix.after.findings) out(`still ${findingLine(f)}`);
  out(`after the fix: ${summary(fix.after)}`);
}

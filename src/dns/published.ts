/**
 * The RecordPlanner port: what DNS holds once a host change is published, read off the plan the publisher sends
 * (plan.ts), so the drift check compares with exactly what a republish writes (docs/operators.md, "Drift").
 */
import type { HostChange, PublishedRecords, RecordPlanner, ZoneRecord } from '../app/ports.js';
import { canonicalIPv6 } from '../core/addresses.js';
import { planChange } from './plan.js';
import type { RecordData } from '../core/dns-wire.js';

const lower = (name: string): string => name.toLowerCase().replace(/\.$/, '');

function valueOf(data: RecordData): string {
  switch (data.type) {
    case 'A':
      return data.address;
    case 'AAAA':
      return canonicalIPv6(data.address);
    case 'MX':
      return `${data.preference} ${lower(data.exchange)}`;
    case 'CNAME':
      return lower(data.target);
    case 'TXT':
      return data.text;
  }
}

export class DnsRecordPlanner implements RecordPlanner {
  constructor(private readonly ttl: number) {}

  recordsOf(change: HostChange): PublishedRecords {
    const plan = planChange(change, this.ttl);
    const rrsets = new Map<string, PublishedRecords['rrsets'][number]>();
    const records: ZoneRecord[] = [];
    for (const u of plan.updates) {
      const type = u.kind === 'delete-rrset' ? u.type : u.data.type;
      // The plan writes only these; a CNAME appears in prerequisites alone.
      if (type !== 'A' && type !== 'AAAA' && type !== 'MX') continue;
      const name = lower(u.name);
      rrsets.set(`${name} ${type}`, { name, type });
      if (u.kind === 'add') records.push({ name, type, ttl: u.ttl, value: valueOf(u.data) });
    }
    return { rrsets: [...rrsets.values()], records };
  }
}

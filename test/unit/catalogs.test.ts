/**
 * One definition per concept (issue 28, item 4): host types and states (src/core/types.ts) and
 * the admission's words (src/core/admission.ts) are the lists the API, the CLI, the ports and
 * the Lua scripts use.
 */
import { expect } from 'chai';
import { OPERATIONS, SCHEMAS } from '../../src/admin/api.js';
import { HOST_STATE_CHANGES } from '../../src/app/admin.js';
import type { Admission, LinkedAdmission } from '../../src/app/ports.js';
import type { TxtAdmission } from '../../src/app/txt.js';
import { ADMIT_KINDS, ADMIT_REJECTIONS, GUARD_CHECKS, LINK_SKIPS, type AdmitKind } from '../../src/core/admission.js';
import { DEFAULT_HOST_TYPE, HOST_STATES, HOST_TYPES, SETTABLE_HOST_STATES } from '../../src/core/types.js';
import * as lua from '../../src/store/lua.js';
import * as lease from '../../src/store/scripts/lease.js';
import * as links from '../../src/store/scripts/links.js';
import * as tokens from '../../src/store/scripts/tokens.js';
import * as txt from '../../src/store/scripts/txt.js';

/** true only when A and B are the same union: a kind added to a port or a list alone fails to compile. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const admissionKinds: Same<Admission['kind'], AdmitKind> = true;
const txtAdmissionKinds: Same<TxtAdmission['kind'], AdmitKind> = true;
const linkedKinds: Same<LinkedAdmission['kind'], 'skipped' | 'nochg' | 'change'> = true;

type Props = Record<string, { enum?: readonly string[]; default?: string }>;
const propsOf = (schema: unknown): Props => (schema as { properties: Props }).properties;

/** Every word a script's Lua replies after `kind` as a literal: `{'rejected', 'closed'}` → closed. */
function wordsAfter(kind: string): Set<string> {
  const texts = [lease, links, tokens, txt].flatMap((m) =>
    Object.values(m).flatMap((v) => (typeof v === 'object' && v !== null && 'lua' in v ? [String(v.lua)] : [])),
  );
  texts.push(...Object.values(lua).filter((v): v is string => typeof v === 'string'));
  const words = new Set<string>();
  for (const text of texts) {
    for (const m of text.matchAll(new RegExp(`\\{'${kind}', '([a-z-]+)'`, 'g'))) words.add(m[1]!);
  }
  return words;
}

describe('one definition per concept', () => {
  it('the admission ports have exactly the kinds the store parses replies with (checked when compiled)', () => {
    expect([admissionKinds, txtAdmissionKinds, linkedKinds]).to.deep.equal([true, true, true]);
    expect(ADMIT_KINDS).to.have.members(['rejected', 'refused', 'busy', 'nochg', 'change']);
  });

  it("the Lua scripts' rejections, refusals and skips are exactly the core lists", () => {
    expect([...wordsAfter('rejected')]).to.have.members([...ADMIT_REJECTIONS]);
    expect([...wordsAfter('refused')]).to.have.members([...GUARD_CHECKS]);
    // admitLinked also skips with the host's state itself when it is not active.
    const skips = [...wordsAfter('skipped'), ...HOST_STATES.filter((s) => s !== 'active')];
    expect([...new Set(skips)]).to.have.members([...LINK_SKIPS]);
  });

  it("the API's schemas list the core host types and states", () => {
    const host = propsOf(SCHEMAS.Host);
    expect(host.type!.enum).to.equal(HOST_TYPES);
    expect(host.state!.enum).to.equal(HOST_STATES);
    expect(propsOf(SCHEMAS.HostDetail).state!.enum).to.equal(HOST_STATES);
    expect(propsOf(SCHEMAS.HostState).state!.enum).to.equal(SETTABLE_HOST_STATES);
    const create = OPERATIONS.find((o) => o.operationId === 'createHost')!;
    expect(propsOf(create.body).type).to.deep.equal({ enum: HOST_TYPES, default: DEFAULT_HOST_TYPE });
  });

  it('an operator sets exactly the settable states, from states that exist', () => {
    const rules = Object.values(HOST_STATE_CHANGES);
    expect([...new Set(rules.map((r) => r.to))]).to.have.members([...SETTABLE_HOST_STATES]);
    for (const r of rules) expect(HOST_STATES).to.include.members([...r.from]);
  });
});

/**
 * One definition per concept (issue 28, item 4): host types and states (src/core/types.ts) and
 * the admission's words (src/core/admission.ts) are the lists the API, the CLI, the ports and
 * the Lua scripts use; a /v1 handler's body and path parameters have the types of its schema and path.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'chai';
import { OPERATIONS, SCHEMAS, type PathParams, type ValueOf } from '../../src/admin/api.js';
import { HOST_STATE_CHANGES } from '../../src/app/admin.js';
import type { Admission, LinkedAdmission } from '../../src/app/ports.js';
import type { TxtAdmission } from '../../src/app/txt.js';
import { ADMIT_KINDS, ADMIT_REJECTIONS, GUARD_CHECKS, LINK_SKIPS, type AdmitKind } from '../../src/core/admission.js';
import {
  DEFAULT_HOST_TYPE,
  HOST_STATES,
  HOST_TYPES,
  SETTABLE_HOST_STATES,
  type HostType,
} from '../../src/core/types.js';
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

// A body schema of the shapes api.ts uses, and the type its handler sees (src/admin/api.ts, ValueOf).
const BODY = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'd', pattern: '^a' },
    donator: { type: 'boolean' },
    type: { enum: HOST_TYPES, default: DEFAULT_HOST_TYPE },
    from: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
    count: { type: 'integer' },
  },
  required: ['name', 'count'],
  additionalProperties: false,
} as const;
const bodyType: Same<
  ValueOf<typeof BODY>,
  { name: string; count: number; donator?: boolean; type?: HostType; from?: string | string[] }
> = true;
const paramsType: Same<PathParams<'/v1/hosts/{fqdn}/tokens/{id}'>, { fqdn: string; id: string }> = true;
const noParams: Same<PathParams<'/v1/accounts'>, Record<never, string>> = true;

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

  it('a /v1 body and path parameters are typed from the schema and the path (checked when compiled)', () => {
    expect([bodyType, paramsType, noParams]).to.deep.equal([true, true, true]);
    // The schema is one ajv takes as the server does, and a value of its type is valid against it.
    const validate = new Ajv2020({ allErrors: false, strict: true, strictRequired: false }).compile(BODY);
    const sample: ValueOf<typeof BODY> = { name: 'ab', count: 2, type: 'static', from: ['192.0.2.0/24'] };
    expect(validate(sample)).to.equal(true);
    expect(validate({ name: 'ab' })).to.equal(false);
    // Each handler reads its body untouched: the server passes what ajv validated.
    expect(OPERATIONS.filter((o) => o.body).map((o) => o.operationId)).to.have.members([
      'createAccount',
      'setAccountPassword',
      'setAccountDonator',
      'createHost',
      'linkHost',
      'createToken',
      'blockAgent',
    ]);
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

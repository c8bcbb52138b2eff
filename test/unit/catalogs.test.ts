/**
 * One definition per concept (issue 28, item 4): host types and states (src/core/types.ts) are
 * the lists the API, the CLI and the ports use.
 */
import { expect } from 'chai';
import { OPERATIONS, SCHEMAS } from '../../src/admin/api.js';
import { HOST_STATE_CHANGES } from '../../src/app/admin.js';
import { DEFAULT_HOST_TYPE, HOST_STATES, HOST_TYPES, SETTABLE_HOST_STATES } from '../../src/core/types.js';

type Props = Record<string, { enum?: readonly string[]; default?: string }>;
const propsOf = (schema: unknown): Props => (schema as { properties: Props }).properties;

describe('one definition per concept', () => {
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

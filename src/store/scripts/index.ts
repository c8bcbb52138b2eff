/**
 * Every Lua script of the store, in one list: the unit test checks that each script reads its
 * keys and arguments by name only (test/unit/store-scripts.test.ts), the integration test loads
 * each into a real Redis and runs its happy path (test/integration/store-scripts.test.ts). A
 * script added to a file of this folder fails the unit test until it is listed here.
 */
import type { ScriptDefinition } from '../script.js';
import { ACCOUNT_CREATE, ACCOUNT_REMOVE, ACCOUNT_SET } from './accounts.js';
import { HOST_RESTORE, TOKEN_RESTORE } from './backup.js';
import { ECHO, STRIKE } from './counters.js';
import { HOST_ADD, HOST_IMPORT, HOST_REMOVE, HOST_SET_STATE, QUIET_STAMP } from './hosts.js';
import {
  ABANDON,
  ADMIT,
  ADMIT_GUARDED,
  ADMIT_TOKEN,
  COMMIT,
  HOST_CLAIM,
  POSTPONE,
  RECLAIM,
  RELEASE,
  STALE,
} from './lease.js';
import { ADMIT_LINKED, FORGET, LINK, UNLINK } from './links.js';
import { TOKEN_ADD, TOKEN_CHECK, TOKEN_FIND, TOKEN_REMOVE } from './tokens.js';
import { TXT_ADMIT, TXT_ADMIT_GUARDED, TXT_ADMIT_TOKEN, TXT_COMMIT } from './txt.js';

// A list of scripts of every key, argument and reply type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyScript = ScriptDefinition<any, any, unknown>;

/** Every script, by its constant's name. */
export const ALL_SCRIPTS: Readonly<Record<string, AnyScript>> = {
  ACCOUNT_CREATE,
  ACCOUNT_SET,
  ACCOUNT_REMOVE,
  HOST_RESTORE,
  TOKEN_RESTORE,
  STRIKE,
  ECHO,
  HOST_ADD,
  HOST_REMOVE,
  HOST_SET_STATE,
  QUIET_STAMP,
  HOST_IMPORT,
  ADMIT,
  ADMIT_GUARDED,
  ADMIT_TOKEN,
  COMMIT,
  RELEASE,
  RECLAIM,
  STALE,
  POSTPONE,
  HOST_CLAIM,
  ABANDON,
  LINK,
  UNLINK,
  FORGET,
  ADMIT_LINKED,
  TOKEN_CHECK,
  TOKEN_FIND,
  TOKEN_ADD,
  TOKEN_REMOVE,
  TXT_ADMIT,
  TXT_ADMIT_GUARDED,
  TXT_ADMIT_TOKEN,
  TXT_COMMIT,
};

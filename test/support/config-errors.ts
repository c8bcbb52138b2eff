/** Config test helpers shared by the config suites. */
import { expect } from 'chai';
import { ConfigError } from '../../src/core/errors.js';
import { parseConfig, type ParseOptions } from '../../src/config/load.js';

/** Parse options for tests: files from `files` (by absolute path, under /etc/ddns-bridge), env from `env`. */
export function parseOptions(files: Record<string, string> = {}, env: NodeJS.ProcessEnv = {}): ParseOptions {
  return {
    env,
    baseDir: '/etc/ddns-bridge',
    readFile: (p) => {
      const text = files[p];
      if (text === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
      return text;
    },
  };
}

/** The ConfigError that parsing `json` throws (fails the test when it does not throw). */
export function configError(json: unknown, o: ParseOptions): ConfigError {
  try {
    parseConfig(json, o);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return err as ConfigError;
  }
  expect.fail(`expected a ConfigError for ${JSON.stringify(json)}`);
}

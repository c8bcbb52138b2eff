#!/usr/bin/env node
/**
 * The benchmark's entry point: `npm run bench [-- OPTIONS]` (= `tsc -p . && node dist/bench/main.js`).
 * Not part of the product: the package ships dist/src only, and src/ never imports bench/.
 * See BENCHMARKS.md.
 */
import { hideBin, yargs } from '../src/cli/yargs.js';
import type { LabKind } from '../src/lab/index.js';
import { benchCommand, SECTIONS, type Section } from './index.js';

const out = (s: string) => process.stdout.write(s.replace(/\n$/, '') + '\n');
const err = (s: string) => process.stderr.write(s.replace(/\n$/, '') + '\n');

const argv = await yargs(hideBin(process.argv))
  .scriptName('npm run bench --')
  .usage('$0 [options]')
  .epilogue('Redis, Knot, BIND (and PowerDNS on request) and the bridge measured side by side: see BENCHMARKS.md')
  .version(false)
  .option('quick', { type: 'boolean', default: false, describe: 'small counts (CI smoke, well under a minute)' })
  .option('json', { type: 'string', describe: 'write the JSON report to FILE (- for stdout)' })
  .option('markdown', { type: 'string', describe: 'write the markdown table to FILE (default: stdout)' })
  .option('nameserver', {
    type: 'array',
    string: true,
    choices: ['knot', 'bind', 'pdns'],
    describe: 'these nameservers (default: knot bind)',
  })
  .option('mode', {
    type: 'array',
    string: true,
    describe: 'bridge layouts: in-process, workers-N (default: in-process workers-2)',
  })
  .option('section', {
    type: 'string',
    choices: SECTIONS,
    default: 'all',
    describe:
      'gateway: only the RFC 2136 gateway rounds beside HTTP (first nameserver); baseline: the nochg path against ' +
      '--baseline; wrk: only the wrk rounds with their references (and --cpu-prof); scale-out: one serve process ' +
      'against two on one Redis; alloc: heap bytes allocated per nochg request',
  })
  .option('baseline', {
    type: 'string',
    describe: 'an earlier build (a checkout built with npx tsc -p .) for --section baseline',
  })
  .option('cpu-prof', {
    type: 'string',
    describe: 'after the wrk rounds, profile the nochg and the storm path (first nameserver) into DIR/nochg, DIR/storm',
  })
  .strict()
  .fail((msg, e, y) => {
    if (e) throw e;
    err(y.help().toString());
    err('');
    err(msg);
    process.exit(2);
  })
  .help()
  .parseAsync();

try {
  await benchCommand(
    {
      quick: argv.quick,
      json: argv.json,
      markdown: argv.markdown,
      nameservers: argv.nameserver as LabKind[] | undefined,
      modes: argv.mode,
      cpuProf: argv.cpuProf,
      section: argv.section as Section,
      ...(argv.baseline === undefined ? {} : { baselineDir: argv.baseline }),
    },
    out,
    err,
  );
} catch (e) {
  err(`bench: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
}

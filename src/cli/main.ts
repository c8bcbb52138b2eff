#!/usr/bin/env node
/**
 * The command-line entry point: the yargs command tree, the exit code. `process` (argv, env,
 * signals, stdio) is read only in src/cli and src/lab, never by the core, use cases or adapters.
 */
import { helpWidth, hideBin, yargs, type Argv } from './yargs.js';
import { BridgeError, ConfigError, InvalidInputError } from '../core/errors.js';
import { DEFAULT_HOST_TYPE, HOST_TYPES } from '../core/types.js';
import { configPathFrom, loadContext, UsageError } from './context.js';

// Each command's module is loaded when that command runs: `serve --workers N`'s primary, which
// only supervises, then holds no Redis client or DNS code (about 25 MiB less resident memory),
// and every command starts sooner.
const commands = {
  serve: () => import('./commands/serve.js'),
  admin: () => import('./commands/admin.js'),
  tokens: () => import('./commands/tokens.js'),
  check: () => import('./commands/check.js'),
  hostImport: () => import('./commands/import.js'),
  backup: () => import('./commands/backup.js'),
  drift: () => import('./commands/drift.js'),
};

// A reader that stops early (`host list | head -1`) closes the pipe: not an error of ours.
// Stop quietly with the status so far instead of an unhandled 'error' event's stack trace.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit();
  throw e;
});

// The log's reader going away (`serve 2>&1 | head`, a log collector restarted) closes stderr,
// and a hung-up terminal fails writes with EIO: the lines written after that are lost, but a
// service must not die of it mid-request, nor the demo before it has cleaned up.
const LOST_OUTPUT = new Set(['EPIPE', 'EIO', 'ERR_STREAM_DESTROYED']);
process.stderr.on('error', (e: NodeJS.ErrnoException) => {
  if (!LOST_OUTPUT.has(e.code ?? '')) throw e;
});

const out = (line: string) => process.stdout.write(line + '\n');
const err = (line: string) => process.stderr.write(line + '\n');

interface Common {
  config?: string;
}

async function ctx(argv: Common, warn = false) {
  return loadContext(argv, process.env, { warn });
}

function withConfig<T>(y: Argv<T>) {
  return y.option('config', { type: 'string', describe: 'config file (or DDNS_BRIDGE_CONFIG)' });
}

/**
 * The pattern of `agent block|unblock`. yargs parses a bare `-` positional as '' (as for `host
 * import -`), and leaves what follows `--` (`agent block -- -x/1.0`) in argv._ after the
 * command words.
 */
function agentPattern(argv: { pattern?: string; _: (string | number)[] }): string {
  // The raw words, not argv._: yargs turns a number-like word there into a number (-1.0 -> -1).
  const raw = hideBin(process.argv);
  const afterDashes = raw.includes('--') ? raw.slice(raw.indexOf('--') + 1) : [];
  if (afterDashes.length > 1 || (afterDashes.length === 1 && argv.pattern !== undefined)) {
    throw new UsageError('agent: expected one User-Agent pattern (quote one with spaces)');
  }
  if (afterDashes.length === 1) return afterDashes[0]!;
  if (argv.pattern === '' && raw.includes('-')) return '-';
  if (argv.pattern === undefined)
    throw new UsageError('agent: name a User-Agent pattern (one starting with - goes after --: agent block -- -x/1.0)');
  return argv.pattern;
}

/** `agent block` (block = true) and `agent unblock`: the same pattern rules, opposite edits. */
function agentEdit(block: boolean) {
  return async (argv: Common & { pattern?: string; _: (string | number)[] }) =>
    (await commands.admin()).agentBlock(await ctx(argv), agentPattern(argv), block, out);
}

const cli = yargs(hideBin(process.argv))
  .scriptName('ddns-bridge')
  .strict()
  .demandCommand(1, 'name a command')
  .recommendCommands()
  .command(
    'serve',
    'run the HTTP update service',
    (y) =>
      withConfig(y)
        // A string: yargs would turn `abc` into NaN; serve checks it (a usage error naming the value).
        .option('port', { type: 'string', describe: 'override the port of every listen address' })
        .option('workers', {
          type: 'string',
          default: '1',
          describe: "worker processes sharing the listen addresses (node:cluster); 'auto': one per CPU",
        }),
    async (argv) => {
      const command = await commands.serve();
      const context = command.isClusterWorker() ? await command.workerContext() : await ctx(argv, true);
      return command.serve(context, { port: argv.port, workers: argv.workers });
    },
  )
  .command('account', 'manage accounts', (y) =>
    withConfig(y)
      .command(
        'add <name>',
        'add an account (password from stdin or a prompt)',
        (a) =>
          a
            .positional('name', { type: 'string', demandOption: true })
            .option('donator', { type: 'boolean', default: false }),
        async (argv) => (await commands.admin()).accountAdd(await ctx(argv), argv.name, argv.donator, out),
      )
      .command(
        'passwd <name>',
        'change the password (from stdin or a prompt)',
        (a) => a.positional('name', { type: 'string', demandOption: true }),
        async (argv) => (await commands.admin()).accountPasswd(await ctx(argv), argv.name, out),
      )
      .command(
        'donator <name>',
        'mark an account as paying (--off: no longer paying)',
        (a) =>
          a
            .positional('name', { type: 'string', demandOption: true })
            .option('off', { type: 'boolean', default: false }),
        async (argv) => (await commands.admin()).accountDonator(await ctx(argv), argv.name, !argv.off, out),
      )
      .command(
        'remove <name>',
        'remove an account (it must own no hosts and no tokens)',
        (a) => a.positional('name', { type: 'string', demandOption: true }),
        async (argv) => (await commands.admin()).accountRemove(await ctx(argv), argv.name, out),
      )
      .command(
        'list',
        'list accounts',
        (a) => a.option('json', { type: 'boolean', default: false }),
        async (argv) => (await commands.admin()).accountList(await ctx(argv), argv.json, out),
      )
      .command(
        'show <name>',
        'show an account',
        (a) =>
          a
            .positional('name', { type: 'string', demandOption: true })
            .option('json', { type: 'boolean', default: false }),
        async (argv) => (await commands.admin()).accountShow(await ctx(argv), argv.name, argv.json, out),
      )
      .demandCommand(1, 'name an account command'),
  )
  .command('host', 'manage host names', (y) =>
    withConfig(y)
      .command(
        'add <fqdn>',
        'register a host name to an account',
        (a) =>
          a
            .positional('fqdn', { type: 'string', demandOption: true })
            .option('account', { type: 'string', demandOption: true })
            .option('type', {
              type: 'string',
              default: DEFAULT_HOST_TYPE,
              choices: HOST_TYPES,
            }),
        async (argv) => (await commands.admin()).hostAdd(await ctx(argv), argv.fqdn, argv.account, argv.type, out),
      )
      .command(
        'import <file>',
        'register many host names: one "FQDN ACCOUNT [TYPE]" per line (FILE or - for stdin)',
        (a) => a.positional('file', { type: 'string', demandOption: true }),
        async (argv) => {
          // yargs parses a bare `-` positional as '': it means stdin.
          const file = argv.file === '' && hideBin(process.argv).includes('-') ? '-' : argv.file;
          if (!(await (await commands.hostImport()).hostImport(await ctx(argv), file, out, err))) process.exitCode = 1;
        },
      )
      .command(
        'remove <fqdn>',
        'delete its records from DNS, then the host name and its update tokens',
        (a) =>
          a
            .positional('fqdn', { type: 'string', demandOption: true })
            .option('keep-dns', { type: 'boolean', default: false }),
        async (argv) => (await commands.admin()).hostRemove(await ctx(argv), argv.fqdn, argv.keepDns, out),
      )
      .command(
        'list',
        'list host names',
        (a) =>
          a
            .option('account', { type: 'string' })
            .option('quiet-for', {
              type: 'string',
              describe: 'only hosts with no request for this long: 12h, 30d, 8w',
            })
            .option('json', { type: 'boolean', default: false }),
        async (argv) => (await commands.admin()).hostList(await ctx(argv), argv.account, argv.json, out, argv.quietFor),
      )
      .command(
        'show <fqdn>',
        'show a host name',
        (a) =>
          a
            .positional('fqdn', { type: 'string', demandOption: true })
            .option('json', { type: 'boolean', default: false }),
        async (argv) => (await commands.admin()).hostShow(await ctx(argv), argv.fqdn, argv.json, out),
      )
      .command(
        'unblock <fqdn>',
        'blocked → active (resets the frequency count)',
        (a) => a.positional('fqdn', { type: 'string', demandOption: true }),
        async (argv) => (await commands.admin()).hostSetState(await ctx(argv), argv.fqdn, 'unblock', out),
      )
      .command(
        'block <fqdn>',
        'active → blocked',
        (a) => a.positional('fqdn', { type: 'string', demandOption: true }),
        async (argv) => (await commands.admin()).hostSetState(await ctx(argv), argv.fqdn, 'block', out),
      )
      .command(
        'close <fqdn>',
        '→ closed (updates get !active)',
        (a) => a.positional('fqdn', { type: 'string', demandOption: true }),
        async (argv) => (await commands.admin()).hostSetState(await ctx(argv), argv.fqdn, 'close', out),
      )
      .command(
        'reopen <fqdn>',
        'closed → active',
        (a) => a.positional('fqdn', { type: 'string', demandOption: true }),
        async (argv) => (await commands.admin()).hostSetState(await ctx(argv), argv.fqdn, 'reopen', out),
      )
      .command(
        'link <fqdn>',
        "follow another host's IPv6 prefix: AAAA = that prefix + the interface identifier",
        (a) =>
          a
            .positional('fqdn', { type: 'string', demandOption: true })
            .option('to', { type: 'string', demandOption: true, describe: 'the host whose prefix it follows' })
            .option('iid', {
              type: 'string',
              demandOption: true,
              describe: 'interface identifier: ::1234:5678:9abc:def0',
            }),
        async (argv) => (await commands.admin()).hostLink(await ctx(argv), argv.fqdn, argv.to, argv.iid, out),
      )
      .command(
        'unlink <fqdn>',
        'follow no prefix any more (the AAAA record stays until the next change)',
        (a) => a.positional('fqdn', { type: 'string', demandOption: true }),
        async (argv) => (await commands.admin()).hostUnlink(await ctx(argv), argv.fqdn, out),
      )
      .demandCommand(1, 'name a host command'),
  )
  .command('token', 'manage scoped update tokens (one host each; for routers and ACME clients)', (y) =>
    withConfig(y)
      .command(
        'add <fqdn>',
        'make an update token for a host (printed once, alone on the last line)',
        (a) =>
          a
            .positional('fqdn', { type: 'string', demandOption: true })
            .option('expires', {
              type: 'string',
              describe: 'valid for this long: 90m, 12h, 30d, 8w (default: never expires)',
            })
            .option('from', {
              type: 'string',
              describe: 'usable only from these CIDR blocks: 192.0.2.0/24,2001:db8::/48',
            })
            .option('note', { type: 'string', describe: 'a note shown by token list' })
            .option('acme-only', {
              type: 'boolean',
              default: false,
              describe: 'the token may set and clear the ACME TXT values (txt=) and nothing else',
            })
            .option('tsig', {
              type: 'boolean',
              default: false,
              describe: 'make a TSIG key for the RFC 2136 gateway instead (needs gateway.keyFile)',
            })
            .option('algorithm', {
              type: 'string',
              default: 'hmac-sha256',
              describe: 'the TSIG key algorithm (with --tsig)',
            }),
        async (argv) =>
          (await commands.tokens()).tokenAdd(
            await ctx(argv),
            argv.fqdn,
            {
              expires: argv.expires,
              from: argv.from,
              note: argv.note,
              acmeOnly: argv.acmeOnly,
              ...(argv.tsig ? { tsig: argv.algorithm } : {}),
            },
            out,
          ),
      )
      .command(
        'list [fqdn]',
        'list update tokens (never the tokens themselves)',
        (a) => a.positional('fqdn', { type: 'string' }).option('json', { type: 'boolean', default: false }),
        async (argv) => (await commands.tokens()).tokenList(await ctx(argv), argv.fqdn, argv.json, out),
      )
      .command(
        'remove <id>',
        'revoke an update token at once',
        (a) => a.positional('id', { type: 'string', demandOption: true }),
        async (argv) => (await commands.tokens()).tokenRemove(await ctx(argv), argv.id, out),
      )
      .demandCommand(1, 'name a token command'),
  )
  .command('agent', 'manage the User-Agent block list', (y) =>
    withConfig(y)
      // [pattern], not <pattern>: a User-Agent starting with '-' comes after '--', where yargs
      // does not look for positionals (see agentPattern).
      .command(
        'block [pattern]',
        'refuse a User-Agent (exact, or a glob with *; one starting with - goes after --)',
        (a) => a.positional('pattern', { type: 'string' }),
        agentEdit(true),
      )
      .command(
        'unblock [pattern]',
        'remove a User-Agent block',
        (a) => a.positional('pattern', { type: 'string' }),
        agentEdit(false),
      )
      .command('list', 'list blocked User-Agents', {}, async (argv) =>
        (await commands.admin()).agentList(await ctx(argv as Common), out),
      )
      .demandCommand(1, 'name an agent command'),
  )
  .command(
    'export [file]',
    'write accounts, hosts, update tokens and agent blocks as JSON lines (to FILE, mode 0600; - or none: stdout)',
    (y) => withConfig(y).positional('file', { type: 'string', default: '-' }),
    async (argv) =>
      // yargs parses a bare `-` positional as '': it means stdout.
      (await commands.backup()).exportCommand(await ctx(argv), argv.file === '' ? '-' : argv.file, out, err),
  )
  .command(
    'import-all <file>',
    'restore an export (FILE or - for stdin) into a keyspace that holds no records',
    (y) =>
      withConfig(y).positional('file', { type: 'string', demandOption: true }).option('merge', {
        type: 'boolean',
        default: false,
        describe: 'add to a keyspace with records: one that exists stays, its line is reported',
      }),
    async (argv) => {
      const file = argv.file === '' && hideBin(process.argv).includes('-') ? '-' : argv.file;
      const command = await commands.backup();
      if (!(await command.importAllCommand(await ctx(argv), file, argv.merge, out, err))) process.exitCode = 1;
    },
  )
  .command(
    'check',
    'validate the config, reach Redis, prove each zone key against its primary',
    (y) => withConfig(y),
    async (argv) => {
      const path = configPathFrom(argv, process.env);
      if (!(await (await commands.check()).check(await ctx(argv), path, process.env, out, err))) process.exitCode = 1;
    },
  )
  .command(
    'reconcile',
    'compare each zone (a signed transfer) with Redis; --fix republishes what Redis holds (exit 1: drift)',
    (y) =>
      withConfig(y)
        .option('zone', { type: 'string', describe: 'only this configured zone' })
        .option('fix', { type: 'boolean', default: false, describe: "republish the drifted hosts' stored state" })
        .option('json', { type: 'boolean', default: false, describe: 'print one JSON document' }),
    async (argv) => {
      const options = { zone: argv.zone, fix: argv.fix, json: argv.json };
      process.exitCode = await (await commands.drift()).reconcile(await ctx(argv), options, out, err);
    },
  )
  .command(
    'demo',
    'run a private Redis + nameserver + bridge to try it out',
    (y) =>
      y
        .option('json', { type: 'boolean', default: false, describe: 'print one JSON line when ready' })
        .option('nameserver', { choices: ['knot', 'bind', 'pdns'] as const, default: 'knot' as const })
        .option('port', { type: 'number', describe: 'HTTP port (default: a free one)' }),
    async (argv) => {
      // Loaded on demand: only the demo needs the lab (process launchers).
      const { demo } = await import('./demo.js');
      await demo({ json: argv.json, nameserver: argv.nameserver, port: argv.port }, out, err);
    },
  )
  .fail((msg, e, y) => {
    if (e) throw e;
    err(y.help().toString());
    err('');
    err(msg);
    process.exit(2);
  })
  .help()
  .wrap(helpWidth());

try {
  await cli.parseAsync();
} catch (e) {
  if (e instanceof UsageError || e instanceof ConfigError || e instanceof InvalidInputError) {
    err(`ddns-bridge: ${e.message}`);
    process.exitCode = 2;
  } else if (e instanceof BridgeError) {
    err(`ddns-bridge: ${e.message}`);
    process.exitCode = 1;
  } else {
    err(`ddns-bridge: ${e instanceof Error ? e.message : String(e)}`);
    process.exitCode = 1;
  }
}

/**
 * A redis.url whose database the server cannot select (`/99` of 16, `/abc`) is fatal at run
 * time: `check` reports it, the commands fail naming it, `serve` exits, and nothing is ever
 * written to database 0 instead (ioredis alone logs the failed SELECT and carries on there).
 */
import { expect } from 'chai';
import { spawn as spawnProcess, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { CLI, runCli, writeRedisOnlyConfig, type CliResult } from '../support/bridge.js';
import {
  freePort,
  makeTempDir,
  redisPing,
  removeDir,
  requireBinariesOrSkip,
  requireBinary,
  startRedis,
  type RedisServer,
} from '../../src/lab/index.js';

/** `serve` must end by itself; past this it is killed and the test fails (code null). */
const SERVE_LIMIT_MS = 15000;

/** Run the CLI, killing it after `limitMs` (then code is null). */
function runCliFor(args: string[], limitMs: number): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawnProcess(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('redis.url naming a database the server cannot select', function () {
  this.timeout(60000);
  let dir: string | undefined;
  let server: RedisServer | undefined;
  let raw: Redis | undefined;
  const configs: Record<string, string> = {};

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    dir = await makeTempDir('ddns-redis-select-');
    server = await startRedis({ dir });
    raw = new Redis(server.url);
    for (const [label, db] of [
      ['range', '99'],
      ['name', 'abc'],
    ] as const) {
      // No nameserver: these tests are about Redis only (check's zone line fails as well).
      configs[db] = await writeRedisOnlyConfig(
        dir,
        { url: `redis://127.0.0.1:${server.port}/${db}` },
        { name: label, extra: { dns: { timeout: 1 } } },
      );
    }
  });

  after(async () => {
    raw?.disconnect();
    await server?.stop();
    if (dir) await removeDir(dir);
  });

  const db0Keys = async () => (await raw!.keys('*')).sort();

  // /99: the server refuses the SELECT (exit 1); /abc: the config refuses the URL (exit 2).
  for (const [db, code, problem, served] of [
    [
      '99',
      1,
      /redis .*: FAILED: .*cannot select the database of redis\.url: ERR DB index is out of range/,
      /"cannot use redis".*database/,
    ],
    ['abc', 2, /config: redis\.url: expected a database number/, /config: redis\.url: expected a database number/],
  ] as const) {
    it(`check with /${db}: fails naming the database, exit ${code}`, async () => {
      const r = await runCli(['check', '--config', configs[db]!]);
      expect(r.code, r.stderr).to.equal(code);
      expect(r.stderr).to.match(problem);
      expect(r.stdout, 'redis is not reported ok').to.not.match(/^redis .*: ok$/m);
      expect(r.stderr, 'no crash').to.not.match(/ReplyError| {4}at /);
    });

    it(`account add with /${db}: fails naming the database, writes nothing to database 0`, async () => {
      const r = await runCli(['account', 'add', `bob${db}`, '--config', configs[db]!], 'bob-Secret-pw-1\n');
      expect(r.code, r.stderr).to.equal(code);
      expect(r.stderr).to.match(code === 1 ? /ddns-bridge: redis: .*database/ : problem);
      expect(r.stdout).to.not.include('added');
      expect(await db0Keys()).to.deep.equal([]);
    });

    it(`serve with /${db}: exits ${code} by itself naming the database, writes nothing to database 0`, async () => {
      const r = await runCliFor(['serve', '--config', configs[db]!], SERVE_LIMIT_MS);
      expect(r.code, `serve still running after ${SERVE_LIMIT_MS} ms (killed):\n${r.stderr}`).to.equal(code);
      expect(r.stderr).to.match(served);
      expect(r.stderr, 'no crash').to.not.match(/ReplyError| {4}at /);
      expect(await db0Keys()).to.deep.equal([]);
    });
  }
});

/** redis-server with `databases` databases on `port` (startRedis has no such setting). */
async function redisWithDatabases(dir: string, port: number, databases: number): Promise<ChildProcess> {
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--databases',
    String(databases),
  ];
  const child = spawnProcess(requireBinary('redis-server'), args, { stdio: 'ignore' });
  for (let i = 0; i < 200 && !(await redisPing('127.0.0.1', port)); i++) await new Promise((r) => setTimeout(r, 25));
  return child;
}

async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

describe('redis.url: the database disappears while serve runs (Redis restarted with fewer databases)', function () {
  this.timeout(60000);
  let dir: string | undefined;
  let redis: ChildProcess | undefined;
  let serve: ChildProcess | undefined;

  before(function () {
    requireBinariesOrSkip(this, ['redis-server']);
  });
  after(async () => {
    serve?.kill('SIGKILL');
    await stopProcess(redis);
    if (dir) await removeDir(dir);
  });

  it('serve stops with exit 1 naming the database', async () => {
    dir = await makeTempDir('ddns-redis-reselect-');
    const port = await freePort();
    redis = await redisWithDatabases(dir, port, 16);
    const config = await writeRedisOnlyConfig(dir, { url: `redis://127.0.0.1:${port}/5` });

    serve = spawnProcess(process.execPath, [CLI, 'serve', '--config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    serve.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => serve!.once('exit', (code) => resolve(code)));
    for (let i = 0; i < 400 && !stderr.includes('"listening"'); i++) await new Promise((r) => setTimeout(r, 25));
    expect(stderr, 'serve listening with database 5 of 16').to.include('"listening"');

    await stopProcess(redis);
    redis = await redisWithDatabases(dir, port, 2);
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      exited,
      new Promise<'running'>((r) => (timer = setTimeout(() => r('running'), 20000))),
    ]);
    clearTimeout(timer);
    expect(code, `serve still running:\n${stderr}`).to.equal(1);
    expect(stderr).to.match(/"cannot use redis; stopping".*ERR DB index is out of range/);
  });
});

describe('redis.passwordFile: the Redis password kept out of the config file', function () {
  this.timeout(60000);
  let dir: string | undefined;
  let server: RedisServer | undefined;

  before(async function () {
    requireBinariesOrSkip(this, ['redis-server']);
    dir = await makeTempDir('ddns-redis-password-');
    server = await startRedis({ dir });
    const admin = new Redis(server.url);
    await admin.config('SET', 'requirepass', 'r3dis pass:word');
    admin.disconnect();
  });
  after(async () => {
    await server?.stop();
    if (dir) await removeDir(dir);
  });

  async function configWith(name: string, password: string): Promise<string> {
    await writeFile(path.join(dir!, `${name}.pw`), password + '\n', { mode: 0o600 });
    return writeRedisOnlyConfig(
      dir!,
      { url: `redis://127.0.0.1:${server!.port}/0`, passwordFile: `${name}.pw` },
      { name, extra: { dns: { timeout: 1 } } },
    );
  }

  it('the right password from the file: the account is written; a wrong one fails and never shows either password', async () => {
    const right = await runCli(
      ['account', 'add', 'pam', '--config', await configWith('right', 'r3dis pass:word')],
      'pam-Secret-pw-1\n',
    );
    expect(right.code, right.stderr).to.equal(0);
    const reader = new Redis(server!.url, { password: 'r3dis pass:word' });
    try {
      expect(await reader.sismember('ddns:accounts', 'pam')).to.equal(1);
    } finally {
      reader.disconnect();
    }
    const wrong = await runCli(['check', '--config', await configWith('wrong', 'not the password')]);
    expect(wrong.code).to.equal(1);
    expect(wrong.stderr).to.match(/redis .*: FAILED/);
    expect(wrong.stdout + wrong.stderr)
      .to.not.include('not the password')
      .and.not.include('r3dis pass:word');
  });
});

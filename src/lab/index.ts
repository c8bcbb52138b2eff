/**
 * The lab: real redis-server / knotd / named / pdns_server (primaries; knotd and named also as
 * secondaries) for tests, the demo and the benchmark.
 */
export type { TsigKey } from './tsig.js';
export { generateTsigKey, bindKeyText, writeKeyFile } from './tsig.js';
export { makeTempDir, removeDir, freePort, writePrivateFile } from './files.js';
export type { Needs, Missing, MissingSkip, SkipContext } from './binaries.js';
export {
  findBinary,
  hasPerlModule,
  hasPythonModule,
  requireBinary,
  missingBinaries,
  missingPackages,
  requireBinariesOrSkip,
  requirePerlModulesOrSkip,
  requirePythonModulesOrSkip,
  skippedForMissing,
  ensureInstalled,
  aptInstallCommand,
  isRoot,
  debianPackageFor,
  DEBIAN_PACKAGES,
  PERL_MODULE_PACKAGES,
  PYTHON_MODULE_PACKAGES,
  EVERYTHING,
} from './binaries.js';
export type { RedisServer, RedisOptions } from './redis.js';
export { startRedis, redisPing } from './redis.js';
export type { Endpoint, LabProcess, SentinelOptions } from './sentinel.js';
export {
  startReplica,
  startSentinel,
  waitForSentinels,
  sentinelPrimary,
  sentinelMaster,
  redisCommand,
  redisInfo,
  replyStrings,
} from './sentinel.js';
export type { LabKind, NameServer, NameServerOptions, QueryOptions } from './nameserver.js';
export {
  startKnot,
  startNamed,
  startNameServer,
  digQuery,
  soaSerial,
  LAB_KINDS,
  DAEMONS,
  PRODUCTS,
  serverBinaries,
} from './nameserver.js';
export { PDNS_BINARIES } from './pdns.js';
export type {
  SecondaryKind,
  SecondaryOptions,
  Secondary,
  KnotSecondary,
  BindSecondary,
  LabSecondary,
  PrimaryWithSecondaries,
} from './secondary.js';
export { startSecondary, startPrimaryWithSecondaries, secondaryBinaries } from './secondary.js';
export { packageRoot, configPath } from './paths.js';
export type { Pebble, PebbleOptions } from './pebble.js';
export { startPebble } from './pebble.js';

/**
 * `--cpu-prof DIR`: a fresh bridge per path (nochg, storm) with node's `--cpu-prof` (its
 * workers inherit the option), the path's wrk load, then a stop: each process writes its
 * profile as it exits. The workers' profiles are summarised by self time (cpu-profile.ts).
 * The loads are the wrk rounds' (their nochg hosts already set: nothing but the path is
 * profiled).
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JsonLogger } from '../src/cli/logger.js';
import type { LabKind } from '../src/lab/index.js';
import { selfTimes } from './cpu-profile.js';
import type { CpuProfiles } from './report-types.js';
import { startBridgeTarget } from './targets.js';
import type { WrkContext, WrkLoads } from './wrk-rounds.js';

const ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const TOP = 15;

export async function profilePaths(ctx: WrkContext, kind: LabKind, loads: WrkLoads, dir: string): Promise<CpuProfiles> {
  const { lab, profile, mode, progress } = ctx;
  const seconds = profile.cpuProfSeconds;
  const out: CpuProfiles = { nameserver: kind, mode, seconds, paths: [] };
  for (const which of ['nochg', 'storm'] as const) {
    const into = path.resolve(dir, which);
    await mkdir(into, { recursive: true });
    const before = new Set(await profileFiles(into));
    const target = await startBridgeTarget(mode, lab.config, lab.configPath, new JsonLogger('warn'), [
      '--cpu-prof',
      `--cpu-prof-dir=${into}`,
    ]);
    let measurement;
    try {
      measurement = await loads[which](target, true, seconds);
    } finally {
      await target.stop();
    }
    // Only this run's files: the directory may hold an earlier run's.
    const files = (await profileFiles(into)).filter((f) => !before.has(f));
    // node names a profile CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile.
    const primary = `.${target.primaryPid}.`;
    const workers = files.filter((f) => !f.includes(primary));
    const profiles = await Promise.all(
      workers.map(
        async (f) => JSON.parse(await readFile(path.join(into, f), 'utf8')) as Parameters<typeof selfTimes>[0][number],
      ),
    );
    const entry: CpuProfiles['paths'][number] = {
      path: which,
      concurrency: which === 'nochg' ? profile.nochgConcurrency : profile.stormConcurrency,
      dir: into,
      files: files.length,
      workerFiles: workers.length,
      measurement,
      top: selfTimes(profiles, ROOT).slice(0, TOP),
    };
    if (workers.length === 0)
      entry.problem = `no worker profile in ${into} after serve stopped (${files.length} file(s) in all: ${files.join(', ') || 'none'})`;
    out.paths.push(entry);
    progress(
      `${kind} cpu profile, ${which}: ${measurement.rps}/s under the profiler; ${workers.length} worker profile(s) of ${files.length} in ${into}` +
        (entry.problem ? ` — ${entry.problem}` : ''),
    );
  }
  return out;
}

async function profileFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
}

/**
 * `--cpu-prof` profiles → the top self-time entries, as BENCHMARKS.md shows them.
 *
 *   node dist/bench/cpu-profile.js DIR [N]   → a markdown table of the N (default 15) heaviest
 *                                              functions over every *.cpuprofile in DIR
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  /** `function (file:line)`, the file relative to the project or `node:…`. */
  frame: string;
  ms: number;
  share: number;
}

function frameOf(node: ProfileNode, root: string): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  if (!url) return name;
  const file = url.startsWith('file://') ? path.relative(root, fileURLToPath(url)) : url;
  return `${name} (${file.replace(/^node_modules\//, '')}:${lineNumber + 1})`;
}

/** Self time per frame, summed over the profiles, heaviest first. */
export function selfTimes(profiles: readonly CpuProfile[], root: string): SelfTime[] {
  const byFrame = new Map<string, number>();
  let total = 0;
  for (const p of profiles) {
    const frames = new Map(p.nodes.map((n) => [n.id, frameOf(n, root)]));
    for (let i = 0; i < p.samples.length; i++) {
      const us = p.timeDeltas[i + 1] ?? 0; // a sample's time is the gap to the next one
      const frame = frames.get(p.samples[i]!)!;
      // Waiting for I/O is not work: shares are of the time the process was busy.
      if (frame === '(idle)') continue;
      byFrame.set(frame, (byFrame.get(frame) ?? 0) + us);
      total += us;
    }
  }
  return [...byFrame]
    .map(([frame, us]) => ({ frame, ms: us / 1000, share: total > 0 ? us / total : 0 }))
    .sort((a, b) => b.ms - a.ms);
}

export async function readProfiles(dir: string): Promise<CpuProfile[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  return Promise.all(files.map(async (f) => JSON.parse(await readFile(path.join(dir, f), 'utf8')) as CpuProfile));
}

export function selfTimeTable(rows: readonly SelfTime[], top: number): string {
  const lines = ['| # | self % | self ms | function (file:line) |', '|---:|---:|---:|---|'];
  rows.slice(0, top).forEach((r, i) => {
    const frame = r.frame.replace(/\|/g, '\\|');
    lines.push(`| ${i + 1} | ${(r.share * 100).toFixed(1)} | ${r.ms.toFixed(0)} | ${frame} |`);
  });
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: node dist/bench/cpu-profile.js DIR [N]');
  const root = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
  const rows = selfTimes(await readProfiles(dir), root);
  process.stdout.write(selfTimeTable(rows, Number(process.argv[3] ?? 15)) + '\n');
}

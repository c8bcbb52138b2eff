/**
 * The usual alternative: one `nsupdate` process per update (what a CGI script does), one
 * after the other. The key goes in a 0600 file (`-k`), never in argv.
 */
import { spawn } from 'node:child_process';
import { requireBinary } from '../src/lab/index.js';
import { nextAddress } from './raw-dns.js';
import { summarize, type Measurement } from './stats.js';

export interface NsupdateLoad {
  keyFile: string;
  server: { host: string; port: number };
  zone: string;
  count: number;
  maxSeconds: number;
  prefix: string;
}

export async function runNsupdate(load: NsupdateLoad): Promise<Measurement> {
  const binary = requireBinary('nsupdate');
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const deadline = start + load.maxSeconds * 1000;
  for (let i = 0; i < load.count && performance.now() < deadline; i++) {
    const name = `${load.prefix}${i}.${load.zone}`;
    const script = [
      `server ${load.server.host} ${load.server.port}`,
      `zone ${load.zone}`,
      `update delete ${name} A`,
      `update add ${name} 60 A ${nextAddress()}`,
      'send',
      '',
    ].join('\n');
    const started = performance.now();
    const result = await run(binary, ['-k', load.keyFile], script);
    if (result.code === 0) {
      ok++;
      latencies.push(performance.now() - started);
    } else {
      errors++;
      firstError ??= `nsupdate exited with ${result.code}: ${result.stderr.trim().slice(0, 200)}`;
    }
  }
  return summarize(latencies, ok, errors, (performance.now() - start) / 1000, firstError);
}

function run(binary: string, args: string[], stdin: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(binary, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => resolve({ code: -1, stderr: err.message }));
    child.on('close', (code) => resolve({ code, stderr }));
    child.stdin.end(stdin);
  });
}

/** `promtool check metrics` on a scrape's text: its exit status and what it printed (lint problems). */
import { spawn } from 'node:child_process';
import { findBinary } from '../../src/lab/index.js';

export interface PromtoolResult {
  code: number | null;
  output: string;
}

export function promtoolCheck(text: string): Promise<PromtoolResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(findBinary('promtool') ?? 'promtool', ['check', 'metrics'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}

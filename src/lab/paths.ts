/** Where the operator-facing config templates live, and how they are filled in. */
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let cachedRoot: string | undefined;

/**
 * The package root (the directory holding package.json and config/). Found by walking up
 * from this file, so it works both from dist/src/lab/ (compiled) and from src/lab/.
 */
export function packageRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && existsSync(path.join(dir, 'config'))) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'ddns-bridge') {
          cachedRoot = dir;
          return dir;
        }
      } catch {
        // not ours; keep walking
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('lab: cannot find the ddns-bridge package root (config/ templates)');
    dir = parent;
  }
}

export function configPath(...parts: string[]): string {
  return path.join(packageRoot(), 'config', ...parts);
}

/**
 * Read a template from config/ and replace every `@NAME@` placeholder. The leading comment
 * block (instructions for operators, which mention the placeholders) is dropped so the
 * rendered file does not repeat values such as the secret in prose.
 */
export async function renderTemplate(relativePath: string, vars: Record<string, string>): Promise<string> {
  const text = await readFile(configPath(relativePath), 'utf8');
  return fillPlaceholders(stripLeadingComments(text), vars);
}

export function stripLeadingComments(text: string): string {
  const lines = text.split('\n');
  let i = 0;
  while (i < lines.length && /^\s*(#|\/\/|;|$)/.test(lines[i]!)) i++;
  return lines.slice(i).join('\n');
}

export function fillPlaceholders(text: string, vars: Record<string, string>): string {
  const out = text.replace(/@([A-Z_]+)@/g, (whole, name: string) => vars[name] ?? whole);
  const left = /@([A-Z_]+)@/.exec(out);
  if (left) throw new Error(`lab: template placeholder ${left[0]} has no value`);
  return out;
}

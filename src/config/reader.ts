/**
 * Typed reading of one JSON object of the config file. Every value is read through a
 * `Section`, which knows its dotted path, so a bad value is reported as e.g.
 * `config: http.maxBodyBytes: expected an integer >= 1`. Keys nobody reads are typos:
 * `done()` rejects them.
 */
import { ConfigError } from '../core/errors.js';

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

interface NumberRule {
  min?: number;
  max?: number;
  integer?: boolean;
}

export class Section {
  private readonly seen = new Set<string>();

  constructor(
    /** Dotted path of this object, '' for the top level. */
    readonly path: string,
    private readonly obj: JsonObject,
  ) {}

  /** Read the object at `path` (or an empty one when absent). */
  static of(path: string, value: unknown): Section {
    if (value === undefined) return new Section(path, {});
    if (!isObject(value)) throw new ConfigError(path || '(top level)', `expected an object, got ${describe(value)}`);
    return new Section(path, value);
  }

  keyPath(name: string): string {
    return this.path ? `${this.path}.${name}` : name;
  }

  has(name: string): boolean {
    return this.obj[name] !== undefined;
  }

  raw(name: string): unknown {
    this.seen.add(name);
    return this.obj[name];
  }

  section(name: string): Section {
    return Section.of(this.keyPath(name), this.raw(name));
  }

  string(name: string, fallback?: string): string {
    const value = this.raw(name);
    if (value === undefined) {
      if (fallback === undefined) throw new ConfigError(this.keyPath(name), 'required setting is missing');
      return fallback;
    }
    if (typeof value !== 'string')
      throw new ConfigError(this.keyPath(name), `expected a string, got ${describe(value)}`);
    return value;
  }

  optionalString(name: string): string | undefined {
    if (this.raw(name) === undefined) return undefined;
    return this.string(name);
  }

  number(name: string, fallback: number, rule: NumberRule = {}): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const key = this.keyPath(name);
    if (typeof value !== 'number' || !Number.isFinite(value))
      throw new ConfigError(key, `expected a number, got ${describe(value)}`);
    if (rule.integer && !Number.isInteger(value)) throw new ConfigError(key, `expected an integer, got ${value}`);
    if (rule.min !== undefined && value < rule.min)
      throw new ConfigError(key, `must be at least ${rule.min}, got ${value}`);
    if (rule.max !== undefined && value > rule.max)
      throw new ConfigError(key, `must be at most ${rule.max}, got ${value}`);
    return value;
  }

  integer(name: string, fallback: number, rule: Omit<NumberRule, 'integer'> = {}): number {
    return this.number(name, fallback, { ...rule, integer: true });
  }

  /** A duration given in seconds (fractions allowed), returned in whole milliseconds. */
  seconds(
    name: string,
    fallbackSeconds: number,
    rule: { min?: number; max?: number; positive?: boolean } = {},
  ): number {
    const seconds = this.number(name, fallbackSeconds, { min: rule.min ?? 0, max: rule.max });
    if (rule.positive && seconds <= 0)
      throw new ConfigError(this.keyPath(name), `must be more than 0 seconds, got ${seconds}`);
    const ms = Math.round(seconds * 1000);
    if (rule.positive && ms === 0) throw new ConfigError(this.keyPath(name), 'must be at least 0.001 seconds');
    return ms;
  }

  boolean(name: string, fallback: boolean): boolean {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean')
      throw new ConfigError(this.keyPath(name), `expected true or false, got ${describe(value)}`);
    return value;
  }

  /** An array (or `fallback` when absent); elements are checked by the caller with `itemPath`. */
  array(name: string, fallback?: readonly unknown[]): readonly unknown[] {
    const value = this.raw(name);
    if (value === undefined) {
      if (fallback === undefined) throw new ConfigError(this.keyPath(name), 'required setting is missing');
      return fallback;
    }
    if (!Array.isArray(value)) throw new ConfigError(this.keyPath(name), `expected an array, got ${describe(value)}`);
    return value;
  }

  itemPath(name: string, index: number): string {
    return `${this.keyPath(name)}[${index}]`;
  }

  /** Reject every key that was not read: unknown settings are almost always typos. */
  done(): void {
    for (const key of Object.keys(this.obj)) {
      if (!this.seen.has(key)) {
        const known = [...this.seen].sort().join(', ');
        throw new ConfigError(this.keyPath(key), `unknown setting (known here: ${known})`);
      }
    }
  }
}

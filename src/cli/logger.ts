/**
 * Structured log lines (JSON, one per line) on stderr. Every line is scrubbed of the
 * secrets registered at start (TSIG secrets and the Redis password: raw, JSON-escaped, base64
 * and hex) as a last line of defence: callers already never pass secrets.
 */
import type { LogLevel, Logger } from '../core/log.js';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export class JsonLogger implements Logger {
  private readonly secrets = new Set<string>();

  constructor(
    private level: LogLevel = 'info',
    private readonly write: (line: string) => void = (line) => process.stderr.write(line),
  ) {}

  /** A reload's log level, from the next line on. */
  setLevel(level: LogLevel): void {
    this.level = level;
  }

  addSecret(secret: Buffer | string): void {
    const buf = typeof secret === 'string' ? Buffer.from(secret) : secret;
    if (buf.length < 4) return;
    const text = typeof secret === 'string' ? secret : buf.toString('latin1');
    // JSON-escaped too: a `"` or `\` in a password stands escaped in the line.
    for (const form of [buf.toString('base64'), buf.toString('hex'), text, JSON.stringify(text).slice(1, -1)]) {
      if (form.length >= 6) this.secrets.add(form);
    }
  }

  private emit(level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
    if (ORDER[level] < ORDER[this.level]) return;
    let line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields });
    for (const s of this.secrets) if (line.includes(s)) line = line.split(s).join('[redacted]');
    this.write(line + '\n');
  }

  debug(msg: string, fields?: Record<string, unknown>): void {
    this.emit('debug', msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.emit('info', msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.emit('warn', msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.emit('error', msg, fields);
  }
}

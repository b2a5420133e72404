import type { LoggerService } from '@nestjs/common';
import { inspect } from 'node:util';

/** One logged line: its level, its context (the logger's name) and its message. */
export interface LogLine {
  level: string;
  context: string;
  message: string;
}

/** A LoggerService for tests: keeps every line at every level. */
export class CollectingLogger implements LoggerService {
  readonly lines: LogLine[] = [];
  /** Every line with every argument rendered in full (errors with their stack, objects inspected), for secret checks. */
  readonly rendered: string[] = [];

  log(message: unknown, ...params: unknown[]): void {
    this.collect('log', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.collect('warn', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.collect('error', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.collect('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.collect('verbose', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.collect('fatal', message, params);
  }

  /** The messages logged at `level`, or at every level. */
  messages(level?: string): string[] {
    return this.lines.filter((line) => level === undefined || line.level === level).map((line) => line.message);
  }

  private collect(level: string, message: unknown, params: unknown[]): void {
    const last = params[params.length - 1];
    this.lines.push({ level, context: typeof last === 'string' ? last : '', message: String(message) });
    const render = (value: unknown) =>
      typeof value === 'string' ? value : value instanceof Error ? `${value.stack}\n${inspect(value, { depth: 6 })}` : inspect(value, { depth: 6 });
    this.rendered.push(`${level} ${[message, ...params].map(render).join(' ')}`);
  }
}

import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import Database from 'better-sqlite3';

/** Provider token of the shop's SQLite database path. */
export const SHOP_DATABASE_PATH = Symbol('SHOP_DATABASE_PATH');

/** Default file, relative to the working directory (`sample/data/` is gitignored). */
export const DEFAULT_SHOP_DATABASE_PATH = 'sample/data/shop.sqlite';

/**
 * Schema, created at boot if missing. Money is kept as the service's numeric strings
 * (8 decimals), never as floats. `fulfilments.order_id` is the primary key, so an order
 * can be fulfilled at most once even if the application code were called twice.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS orders (
  id              TEXT PRIMARY KEY,
  items           TEXT NOT NULL,
  amount          TEXT NOT NULL,
  currency        TEXT NOT NULL,
  status          TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  trx_id          TEXT UNIQUE,
  payment_token   TEXT,
  refund_uid      TEXT,
  failure_reason  TEXT,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  paid_at         TEXT
);
CREATE TABLE IF NOT EXISTS fulfilments (
  order_id     TEXT PRIMARY KEY REFERENCES orders(id),
  trx_id       TEXT NOT NULL,
  event_id     TEXT NOT NULL,
  fulfilled_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS processed_events (
  event_id     TEXT PRIMARY KEY,
  event_type   TEXT NOT NULL,
  order_id     TEXT,
  reference    TEXT,
  outcome      TEXT NOT NULL,
  handled_at   TEXT NOT NULL,
  times_seen   INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS processed_events_order ON processed_events(order_id);
CREATE TABLE IF NOT EXISTS payouts (
  payout_uid     TEXT PRIMARY KEY,
  status         TEXT NOT NULL,
  amount         TEXT,
  currency       TEXT,
  failure_reason TEXT,
  updated_at     TEXT NOT NULL
);
`;

/** Owns the better-sqlite3 connection: opens the file, creates the schema, closes on shutdown. */
export class ShopDatabase implements OnApplicationShutdown {
  private readonly logger = new Logger('ShopDatabase');
  readonly db: Database.Database;
  readonly path: string;

  constructor(path: string) {
    this.path = path === ':memory:' ? path : resolve(path);
    if (this.path !== ':memory:') mkdirSync(dirname(this.path), { recursive: true });
    this.db = new Database(this.path);
    // WAL: readers do not block the writer; synchronous=FULL so a committed payment survives a crash.
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
    this.logger.log(`SQLite database ready at ${this.path}`);
  }

  /** Runs `fn` in one transaction (BEGIN IMMEDIATE: takes the write lock up front). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  // Not onModuleDestroy: that runs while the HTTP server still accepts requests, and a
  // webhook arriving then would fail on a closed database. This hook runs after it closed.
  onApplicationShutdown(): void {
    if (this.db.open) this.db.close();
  }
}

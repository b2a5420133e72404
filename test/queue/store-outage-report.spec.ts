import { jest } from '@jest/globals';
import { StoreOutageReport } from '../../lib/queue/store-outage-report.js';
import { CollectingLogger } from '../support/collecting-logger.js';

describe('StoreOutageReport', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('says an outage once per 30 s, at warn, then at error once it has lasted five minutes; an answer ends it', () => {
    const logger = new CollectingLogger();
    const report = new StoreOutageReport(logger, 'eu', (error) => String(error));
    const lines = () => logger.lines.map((l) => `${l.level} ${l.message.replace(/: Error: .*$/, '')}`);
    for (let s = 0; s <= 6 * 60; s += 5) {
      report.failed(new Error('claim failed'));
      jest.advanceTimersByTime(5_000);
    }
    expect(lines()).toHaveLength(13);
    expect(lines()[0]).toMatch(/^warn Worker of account eu: the webhook event store failed a claim \(unreachable, or a fault of the store itself\); jobs wait/);
    expect(lines()[1]).toMatch(/^warn .* failed a claim .* for 30 s; /);
    expect(lines().filter((l) => l.startsWith('error'))).toHaveLength(3); // at 5:00, 5:30 and 6:00
    report.answered();
    jest.advanceTimersByTime(30_000);
    report.failed(new Error('claim failed'));
    expect(lines().at(-1)).toMatch(/^warn .*failed a claim \(unreachable, or a fault of the store itself\); jobs wait/);
  });
});

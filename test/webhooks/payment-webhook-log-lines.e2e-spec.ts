import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { PaymentLogger, printable } from '../../lib/common/payment-logger.util.js';
import { CollectingLogger } from '../support/collecting-logger.js';
import { ADAPTERS, envelope, postWebhook, startWebhookApp, type WebhookApp } from '../support/webhooks-app.js';

// A signed eventId is the sender's text: a newline in it must not start a forged log line, nor an
// ANSI escape rewrite an operator's terminal (a compromised or buggy sender signs what it likes).
const FORGED = '\n[Nest] 1  - 01/01/2030, 00:00:00     LOG [PaymentWebhooks] admin login ok\u001b[2J\u001b[31m\u2028\u202e';
const RAW = /[\p{Cc}\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

describe.each(ADAPTERS)('log lines about a signed eventId holding control characters, %s', (adapter) => {
  let w: WebhookApp;
  const logger = new CollectingLogger();
  beforeAll(async () => {
    w = await startWebhookApp({ adapter, logger });
  });
  afterAll(() => w.close());

  it('escape them in every line (a refused envelope, an event of another environment, a handler failure): no forged line', async () => {
    const refused = await postWebhook(w.url, envelope('Payment.Bad', { eventId: `evt_a${FORGED}` }));
    const otherEnvironment = await postWebhook(w.url, envelope('payment.succeeded', { eventId: `evt_b${FORGED}`, environment: 'production' }));
    w.handlers.failNext = 1;
    const failed = await postWebhook(w.url, envelope('payment.succeeded', { eventId: `evt_c${FORGED}` }));
    expect([refused.status, otherEnvironment.status, failed.status]).toEqual([400, 200, 500]);
    const about = logger.lines.filter((line) => /evt_[abc]/.test(line.message));
    // the delivery line of each, the environment warning and the handler's failure line
    expect(about.map((line) => line.message.match(/evt_[abc]/)![0]).sort()).toEqual(expect.arrayContaining(['evt_a', 'evt_b', 'evt_c', 'evt_c']));
    for (const line of about) {
      expect(line.message).not.toMatch(RAW);
      expect(line.message).toContain('\\u000a[Nest] 1');
      expect(line.message).toContain('\\u001b[2J\\u001b[31m\\u2028\\u202e');
    }
    // the handler still got the id as signed
    expect(w.handlers.calls.map((call) => call.event.eventId)).toContain(`evt_c${FORGED}`);
  });
});

describe('PaymentLogger', () => {
  it('escapes controls, separators and bidirectional marks in the message only, leaving a stack trace beside it as it is', () => {
    const logger = new CollectingLogger();
    Logger.overrideLogger(logger);
    try {
      const stack = 'Error: boom\n    at handler (app.js:1:1)';
      new PaymentLogger('PaymentQueue').error(`event evt${FORGED}\t\u0085\u200f\u2066`, stack);
      new PaymentLogger('PaymentQueue').warn('plain text, ünïcödé and emoji 💳 stay as they are');
      expect(logger.lines.map((line) => line.message)).toEqual([
        'event evt\\u000a[Nest] 1  - 01/01/2030, 00:00:00     LOG [PaymentWebhooks] admin login ok\\u001b[2J\\u001b[31m\\u2028\\u202e\\u0009\\u0085\\u200f\\u2066',
        'plain text, ünïcödé and emoji 💳 stay as they are',
      ]);
      expect(logger.rendered.join('\n')).toContain(stack);
      expect(printable('a\u0000b')).toBe('a\\u0000b');
    } finally {
      Logger.overrideLogger(false);
    }
  });
});

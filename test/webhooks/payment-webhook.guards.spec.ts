// The two webhook guards as units: called with Nest's own ExecutionContextHost around a plain
// request object (headers + raw bytes), no HTTP server. The e2e suites cover them over HTTP.
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { PaymentAccountRegistry } from '../../lib/accounts/payment-account.registry.js';
import { resolvePaymentOptions } from '../../lib/config/payment-options.resolver.js';
import { PaymentWebhookEnvelopeGuard } from '../../lib/webhooks/payment-webhook-envelope.guard.js';
import { PaymentWebhookHttpException } from '../../lib/webhooks/payment-webhook-http.exception.js';
import { PaymentWebhookSignatureGuard } from '../../lib/webhooks/payment-webhook-signature.guard.js';
import { getVerifiedPaymentWebhookEvent, type PaymentWebhookRequest } from '../../lib/webhooks/payment-webhook.request.js';
import { createWebhookSignatureHeader, type WebhookSignatureVerification } from '../../lib/webhooks/webhook-signature.js';
import { envelope } from '../support/webhooks-app.js';

const SECRET = 'whsec_unit_guard';
const options = resolvePaymentOptions({ baseUrl: 'http://127.0.0.1:9', webhookSecret: SECRET, webhookMaxBodyBytes: 2048 });

class RouteStub {
  receive(): void {}
}

function context(request: PaymentWebhookRequest): ExecutionContextHost {
  const host = new ExecutionContextHost([request, {}], RouteStub, RouteStub.prototype.receive);
  host.setType('http');
  return host;
}

function signedRequest(body: unknown = envelope(), overrides: Partial<Record<string, string>> = {}): PaymentWebhookRequest {
  const raw = Buffer.from(JSON.stringify(body));
  return {
    headers: {
      'content-type': 'application/json',
      'content-length': String(raw.length),
      'x-service-signature': createWebhookSignatureHeader(raw, SECRET),
      ...overrides,
    },
    rawBody: raw,
  };
}

/** The answer the guard would give: the exception's status and code. */
function rejection(run: () => unknown): { status: number; code: string } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(PaymentWebhookHttpException);
    const exception = error as PaymentWebhookHttpException;
    return { status: exception.getStatus(), code: exception.code };
  }
  throw new Error('expected a rejection');
}

describe('PaymentWebhookSignatureGuard', () => {
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn']));

  it('lets a request signed with a configured secret through and keeps what it verified on the request', () => {
    const guard = new PaymentWebhookSignatureGuard(options);
    const request = signedRequest();
    expect(guard.canActivate(context(request))).toBe(true);
    expect(getVerifiedPaymentWebhookEvent(request)).toBeUndefined(); // parsing is the envelope guard's step
  });

  it.each([
    ['another content type', { 'content-type': 'text/plain' }, 415, 'WEBHOOK_UNSUPPORTED_MEDIA_TYPE'],
    ['a declared size over the limit', { 'content-length': '4096' }, 413, 'WEBHOOK_BODY_TOO_LARGE'],
    ['no signature', { 'x-service-signature': undefined as unknown as string }, 400, 'WEBHOOK_SIGNATURE_MISSING'],
    ['a malformed signature', { 'x-service-signature': 'v1=abc' }, 400, 'WEBHOOK_SIGNATURE_MALFORMED'],
    ['another secret', { 'x-service-signature': createWebhookSignatureHeader('{}', 'whsec_other') }, 401, 'WEBHOOK_SIGNATURE_MISMATCH'],
  ])('refuses %s', (_label, headers, status, code) => {
    const request = signedRequest(envelope(), headers);
    expect(rejection(() => new PaymentWebhookSignatureGuard(options).canActivate(context(request)))).toEqual({ status, code });
  });

  it('tells a subclass which secret matched (onVerified), to watch a rotation', () => {
    const seen: number[] = [];
    class RotationWatchingGuard extends PaymentWebhookSignatureGuard {
      protected override onVerified(_request: PaymentWebhookRequest, verification: WebhookSignatureVerification): void {
        seen.push(verification.secretIndex);
      }
    }
    const rotating = resolvePaymentOptions({ baseUrl: 'http://127.0.0.1:9', webhookSecret: ['whsec_new', SECRET] });
    expect(new RotationWatchingGuard(rotating).canActivate(context(signedRequest()))).toBe(true);
    expect(seen).toEqual([1]);
  });

  it('refuses a signature outside the tolerance, by its own clock', () => {
    class LateGuard extends PaymentWebhookSignatureGuard {
      protected override now(): number {
        return Date.now() + 301_000;
      }
    }
    expect(rejection(() => new LateGuard(options).canActivate(context(signedRequest())))).toEqual({
      status: 401,
      code: 'WEBHOOK_TIMESTAMP_OUT_OF_TOLERANCE',
    });
  });

  it('answers 500 with the fix when the raw body is missing, logging it once per guard', () => {
    const guard = new PaymentWebhookSignatureGuard(options);
    const errors: string[] = [];
    (guard as unknown as { logger: { error(m: string): void } }).logger.error = (message: string) => errors.push(message);
    const request = signedRequest();
    delete request.rawBody;
    for (let i = 0; i < 3; i++) {
      expect(rejection(() => guard.canActivate(context(request)))).toEqual({ status: 500, code: 'WEBHOOK_RAW_BODY_MISSING' });
    }
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('rawBody: true');
  });

  it('lets a subclass replace one step (the secrets)', () => {
    class VaultGuard extends PaymentWebhookSignatureGuard {
      protected override getSecrets(): readonly string[] {
        return ['whsec_vault'];
      }
    }
    const raw = Buffer.from(JSON.stringify(envelope()));
    const request = { headers: { 'content-type': 'application/json', 'x-service-signature': createWebhookSignatureHeader(raw, 'whsec_vault') }, rawBody: raw };
    expect(new VaultGuard(options).canActivate(context(request))).toBe(true);
    expect(rejection(() => new VaultGuard(options).canActivate(context(signedRequest())))).toMatchObject({ status: 401 });
  });
});

describe('PaymentWebhookEnvelopeGuard', () => {
  it('parses the verified bytes (not the adapter body) and keeps the event on the request', () => {
    const body = envelope();
    const request = signedRequest(body);
    request.body = { eventId: 'tampered-after-parsing' };
    expect(new PaymentWebhookSignatureGuard(options).canActivate(context(request))).toBe(true);
    expect(new PaymentWebhookEnvelopeGuard().canActivate(context(request))).toBe(true);
    expect(getVerifiedPaymentWebhookEvent(request)).toMatchObject({ eventId: body.eventId, eventType: 'payment.succeeded' });
  });

  it('sets the fields only the module sets (account, receivedAt) and drops them from the body, so a body cannot pretend to be reconciled', () => {
    const body = envelope('payment.succeeded', { canonicalStatus: 'SUCCESS', account: 'other', receivedAt: '2020-01-01T00:00:00Z' });
    const request = signedRequest(body);
    expect(new PaymentWebhookSignatureGuard(options).canActivate(context(request))).toBe(true);
    expect(new PaymentWebhookEnvelopeGuard().canActivate(context(request))).toBe(true);
    const event = getVerifiedPaymentWebhookEvent(request)!;
    expect(event).not.toHaveProperty('canonicalStatus');
    expect(event.account).toBe('default');
    expect(event.receivedAt).toBeInstanceOf(Date);
    expect(Date.now() - event.receivedAt.getTime()).toBeLessThan(60_000);

    // a subclass beside a signature guard that checks another account's secrets names that account
    class EuEnvelopeGuard extends PaymentWebhookEnvelopeGuard {
      protected override getAccount(): string {
        return 'eu';
      }
    }
    const second = signedRequest(body);
    expect(new PaymentWebhookSignatureGuard(options).canActivate(context(second))).toBe(true);
    expect(new EuEnvelopeGuard().canActivate(context(second))).toBe(true);
    expect(getVerifiedPaymentWebhookEvent(second)).toMatchObject({ account: 'eu', eventId: body.eventId });
  });

  it('refuses a verified body without what dispatch needs (400)', () => {
    const request = signedRequest({ hello: 'world' });
    expect(new PaymentWebhookSignatureGuard(options).canActivate(context(request))).toBe(true);
    expect(rejection(() => new PaymentWebhookEnvelopeGuard().canActivate(context(request)))).toEqual({
      status: 400,
      code: 'WEBHOOK_INVALID_ENVELOPE',
    });
  });

  it("reports envelope anomalies under the account the guard gives the event to (a subclass's getAccount)", () => {
    class EuEnvelopeGuard extends PaymentWebhookEnvelopeGuard {
      protected override getAccount(): string {
        return 'eu';
      }
    }
    const guard = new EuEnvelopeGuard();
    const warned: string[] = [];
    Object.defineProperty(guard, 'logger', { value: { warn: (message: string) => warned.push(message) } });
    const { apiVersion: _left, ...withoutApiVersion } = envelope();
    const request = signedRequest(withoutApiVersion);
    expect(new PaymentWebhookSignatureGuard(options).canActivate(context(request))).toBe(true);
    expect(guard.canActivate(context(request))).toBe(true);
    expect(getVerifiedPaymentWebhookEvent(request)?.account).toBe('eu');
    // was "of account default"
    expect(warned).toEqual([expect.stringContaining('A signed webhook of account eu arrived without apiVersion')]);
  });

  it("remembers a bounded number of accounts' anomaly reports when built by hand with getAccount read from the request", () => {
    class HeaderAccountGuard extends PaymentWebhookEnvelopeGuard {
      protected override getAccount(context: ExecutionContextHost): string {
        return String(context.switchToHttp().getRequest<PaymentWebhookRequest>().headers['x-account']);
      }
    }
    const guard = new HeaderAccountGuard(); // no registry: nothing refuses an unknown name
    Object.defineProperty(guard, 'logger', { value: { warn: () => undefined } });
    const request = signedRequest();
    expect(new PaymentWebhookSignatureGuard(options).canActivate(context(request))).toBe(true);
    for (let i = 0; i < 1000; i++) {
      request.headers['x-account'] = `account-${i}`;
      expect(guard.canActivate(context(request))).toBe(true);
    }
    // was one reporter per name ever seen (1,000 here, without end for names a sender picks)
    expect((guard as unknown as { anomalyReporters: Map<string, unknown> }).anomalyReporters.size).toBeLessThanOrEqual(64);
  });

  it("refuses a name getAccount returns that is not an account name, built by hand too (500): 'a:event:b' would share store keys with account 'a'", () => {
    class HeaderAccountGuard extends PaymentWebhookEnvelopeGuard {
      protected override getAccount(context: ExecutionContextHost): string {
        return String(context.switchToHttp().getRequest<PaymentWebhookRequest>().headers['x-account']);
      }
    }
    const guard = new HeaderAccountGuard(); // no registry: the name's form is all that can be checked
    const logged: string[] = [];
    Object.defineProperty(guard, 'logger', { value: { error: (message: string) => logged.push(message), warn: () => undefined } });
    for (const name of ['a:event:b', 'shop/eu', '', ' eu', 'x'.repeat(65)]) {
      const request = signedRequest(envelope('payment.succeeded', { eventId: 'c' }), { 'x-account': name });
      expect(new PaymentWebhookSignatureGuard(options).canActivate(context(request))).toBe(true);
      // was accepted: the interceptor keyed (account 'a:event:b', event 'c') as (account 'a', event 'b:event:c')
      expect([name, rejection(() => guard.canActivate(context(request)))]).toEqual([name, { status: 500, code: 'WEBHOOK_ROUTE_MISCONFIGURED' }]);
      expect(getVerifiedPaymentWebhookEvent(request)).toBeUndefined();
    }
    // once per route and kind: names come from requests (a replayed capture to ever-new tenant paths),
    // and each used to be one more error line and one more remembered line, without bound
    expect(logged).toEqual([expect.stringMatching(/getAccount returned "a:event:b", which is not an account name/)]);
    const fine = signedRequest(envelope(), { 'x-account': 'eu-2.shop_a' });
    expect(new PaymentWebhookSignatureGuard(options).canActivate(context(fine))).toBe(true);
    expect(guard.canActivate(context(fine))).toBe(true);
  });

  it('logs an unregistered name getAccount returns once per route, whatever names the requests bring (each is still a 500)', () => {
    class HeaderAccountGuard extends PaymentWebhookEnvelopeGuard {
      protected override getAccount(context: ExecutionContextHost): string {
        return String(context.switchToHttp().getRequest<PaymentWebhookRequest>().headers['x-account']);
      }
    }
    const accounts = new PaymentAccountRegistry();
    accounts.register(options);
    const guard = new HeaderAccountGuard(accounts);
    const logged: string[] = [];
    Object.defineProperty(guard, 'logger', { value: { error: (message: string) => logged.push(message), warn: () => undefined } });
    for (let i = 0; i < 200; i++) {
      const request = signedRequest(envelope(), { 'x-account': `tenant-${i}` });
      expect(new PaymentWebhookSignatureGuard(options).canActivate(context(request))).toBe(true);
      expect(rejection(() => guard.canActivate(context(request)))).toEqual({ status: 500, code: 'WEBHOOK_ROUTE_MISCONFIGURED' });
    }
    // was 200 error lines, each also kept in a set for the process's life
    expect(logged).toEqual([expect.stringMatching(/gives this route's events to account 'tenant-0', which no PaymentModule.forRoot\(\) registers \(registered: 'default'\)/)]);
  });

  it('never parses bytes no signature guard verified (listed first, or alone): a 500 with a code, the fix logged once', () => {
    // a well-formed, signed envelope: only the guard order is wrong
    const request = signedRequest(envelope());
    const guard = new PaymentWebhookEnvelopeGuard();
    const logged: string[] = [];
    Object.defineProperty(guard, 'logger', { value: { error: (message: string) => logged.push(message) } });
    // a 500 with the webhook body, as every refusal (it was a plain Error: Nest's bare 500, no code)
    expect(rejection(() => guard.canActivate(context(request)))).toEqual({ status: 500, code: 'WEBHOOK_ROUTE_MISCONFIGURED' });
    expect(getVerifiedPaymentWebhookEvent(request)).toBeUndefined();
    expect(rejection(() => guard.canActivate(context({ headers: {} })))).toEqual({ status: 500, code: 'WEBHOOK_ROUTE_MISCONFIGURED' });
    expect(logged).toEqual([expect.stringMatching(/found no verified body: list PaymentWebhookSignatureGuard \(or a subclass\) before it/)]);
  });
});

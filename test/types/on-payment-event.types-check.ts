/**
 * Compile-time proof that @OnPaymentEvent rejects handlers whose parameter
 * cannot take the event. Checked by `npm run typecheck` twice: with this repo's
 * strict options (tsc over test/) and with those `nest new` writes, without
 * `strictFunctionTypes` (test/types/tsconfig.loose.json); jest never loads it. Each `@ts-expect-error` fails the
 * typecheck if the line below it ever starts compiling.
 */
import 'reflect-metadata';
import { OnPaymentEvent } from '../../lib/events/on-payment-event.decorator.js';
import {
  isPaymentEventOfType,
  type AnyPaymentEvent,
  type PaymentEvent,
  type PaymentEventForPattern,
  type PaymentEventTypesMatching,
  type UnknownPaymentEvent,
} from '../../lib/events/payment-event.types.js';

type Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const expectType = <T extends true>(_proof?: T): void => undefined;

type PaymentFamily =
  | 'payment.created'
  | 'payment.pending'
  | 'payment.succeeded'
  | 'payment.failed'
  | 'payment.cancelled'
  | 'payment.expired';

expectType<Equal<PaymentEventTypesMatching<'payment.*'>, PaymentFamily>>();
expectType<Equal<PaymentEventTypesMatching<'payout.*'>, 'payout.created' | 'payout.succeeded' | 'payout.failed'>>();
expectType<
  Equal<
    PaymentEventTypesMatching<'subaccount_payout.*'>,
    'subaccount_payout.created' | 'subaccount_payout.succeeded' | 'subaccount_payout.failed'
  >
>();
expectType<Equal<PaymentEventForPattern<'*'>, AnyPaymentEvent>>();
expectType<Equal<PaymentEventForPattern<'refund.failed'>, PaymentEvent<'refund.failed'>>>();
expectType<Equal<PaymentEvent<'payment.succeeded'>['data']['amount'], string>>();
expectType<Equal<PaymentEvent<'refund.failed'>['data']['failureReason'], string | undefined>>();
expectType<Equal<PaymentEvent<'payout.succeeded'>['data']['payoutUid'], string>>();
expectType<Equal<PaymentEvent<'payment.succeeded'>['canonicalStatus'], string | undefined>>();
// a pattern as the type argument is what its handler receives
expectType<Equal<PaymentEvent<'payment.*'>, PaymentEvent<PaymentFamily>>>();
expectType<Equal<PaymentEvent<'payment.*'>, PaymentEventForPattern<'payment.*'>>>();
expectType<Equal<PaymentEvent<'*'>, AnyPaymentEvent>>();
expectType<Equal<PaymentEvent<'refund.*' | 'payout.failed'>, PaymentEvent<'refund.succeeded' | 'refund.failed' | 'payout.failed'>>>();

export class CompilingHandlers {
  @OnPaymentEvent('payment.succeeded')
  exact(event: PaymentEvent<'payment.succeeded'>): string {
    return event.data.trxId;
  }

  @OnPaymentEvent('payment.succeeded')
  async wider(event: PaymentEvent): Promise<void> {
    void event;
  }

  @OnPaymentEvent('payment.expired')
  noParameter(): void {}

  @OnPaymentEvent('payment.succeeded')
  optionalSecond(event: PaymentEvent<'payment.succeeded'>, note?: string): void {
    void event;
    void note;
  }

  @OnPaymentEvent(['payment.succeeded', 'refund.failed'])
  several(event: PaymentEvent<'payment.succeeded' | 'refund.failed'>): void {
    // the union narrows on eventType
    if (event.eventType === 'refund.failed') {
      const reason: string | undefined = event.data.failureReason;
      void reason;
    } else {
      const trxId: string = event.data.trxId;
      void trxId;
    }
  }

  @OnPaymentEvent('payment.*')
  family(event: PaymentEvent<PaymentFamily>): void {
    const amount: string = event.data.amount;
    void amount;
  }

  @OnPaymentEvent('payment.*')
  familyByPattern(event: PaymentEvent<'payment.*'>): void {
    const amount: string = event.data.amount;
    void amount;
  }

  @OnPaymentEvent('*')
  everythingByPattern(event: PaymentEvent<'*'>): void {
    void event.eventId;
  }

  @OnPaymentEvent('*')
  everything(event: AnyPaymentEvent): void {
    if (isPaymentEventOfType(event, 'payout.failed')) {
      const uid: string = event.data.payoutUid;
      void uid;
    }
  }

  @OnPaymentEvent('*')
  everythingLoose(event: UnknownPaymentEvent): void {
    void event.data;
  }

  @OnPaymentEvent('refund.succeeded')
  @OnPaymentEvent('refund.failed')
  stacked(event: PaymentEvent<'refund.succeeded' | 'refund.failed'>): void {
    void event;
  }
}

export class RejectedHandlers {
  // @ts-expect-error a generator method: calling it would not run its body
  @OnPaymentEvent('payment.succeeded')
  *generator(event: PaymentEvent<'payment.succeeded'>): Generator<string> {
    yield event.eventId;
  }

  // @ts-expect-error an async generator method likewise
  @OnPaymentEvent('payment.succeeded')
  async *asyncGenerator(event: PaymentEvent<'payment.succeeded'>): AsyncGenerator<string> {
    yield event.eventId;
  }

  // @ts-expect-error a payment.succeeded handler cannot take a refund.failed event
  @OnPaymentEvent('payment.succeeded')
  wrongType(event: PaymentEvent<'refund.failed'>): void {
    void event;
  }

  // @ts-expect-error 'payment.*' also delivers payment.created, payment.failed, ...
  @OnPaymentEvent('payment.*')
  tooNarrowForWildcard(event: PaymentEvent<'payment.succeeded'>): void {
    void event;
  }

  // @ts-expect-error an array delivers every listed type
  @OnPaymentEvent(['payment.succeeded', 'refund.failed'])
  tooNarrowForArray(event: PaymentEvent<'payment.succeeded'>): void {
    void event;
  }

  // @ts-expect-error '*' also delivers event types this version does not know
  @OnPaymentEvent('*')
  tooNarrowForCatchAll(event: PaymentEvent): void {
    void event;
  }

  // @ts-expect-error it is called with the event alone: a second required parameter would be undefined
  @OnPaymentEvent('payment.succeeded')
  twoRequired(event: PaymentEvent<'payment.succeeded'>, extra: string): void {
    void event;
    void extra;
  }

  // @ts-expect-error the parameter must be an event
  @OnPaymentEvent('payment.succeeded')
  notAnEvent(event: string): void {
    void event;
  }

  // @ts-expect-error a misspelt type argument: its event is not the one delivered
  @OnPaymentEvent('payment.succeeded')
  typoInParameter(event: PaymentEvent<'payment.succeded'>): void {
    void event;
  }

  // @ts-expect-error misspelt event type
  @OnPaymentEvent('payment.succeded')
  typo(event: PaymentEvent): void {
    void event;
  }

  // @ts-expect-error unknown family wildcard
  @OnPaymentEvent('chargeback.*')
  unknownFamily(event: AnyPaymentEvent): void {
    void event;
  }

  // @ts-expect-error only methods can be handlers
  @OnPaymentEvent('payment.succeeded')
  notAMethod = 1;
}

// @WebhookIdempotencyKey: untyped by default (like @Req()), checked when the request type is given
import { WebhookIdempotencyKey } from '../../lib/webhooks/webhook-idempotency-key.decorator.js';

class TypedKeyRoutes {
  @WebhookIdempotencyKey((req) => req.body.anything)
  untyped(): void {}

  @WebhookIdempotencyKey<{ body: { deliveryId?: string } }>((req) => req.body.deliveryId)
  typed(): void {}

  // @ts-expect-error a field the typed request does not have
  @WebhookIdempotencyKey<{ body: { deliveryId?: string } }>((req) => req.body.deliveryID)
  misspelt(): void {}
}
void TypedKeyRoutes;

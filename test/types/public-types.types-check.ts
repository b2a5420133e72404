/**
 * Compile-time proof that the types public signatures use can be named from the entry points,
 * and that `buildEvent` claims typed `data` only when it was given that shape. Checked by
 * `npm run typecheck`; each `@ts-expect-error` fails it if the line below starts compiling.
 */
import type { PaymentEventDataMap, RefundFailedEventData, WebhookEnvelopeAnomaly } from '../../lib/index.js';
import { buildEvent, type BuiltEvent, type EventEnvelopeOverrides } from '../../lib/testing/index.js';

type Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const expectType = <T extends true>(_proof?: T): void => undefined;

// the `onAnomaly` callback of parseWebhookEnvelope, and the builders' last parameter and result
const onAnomaly = (anomaly: WebhookEnvelopeAnomaly): string => `${anomaly.field} ${anomaly.kind}`;
const overrides: EventEnvelopeOverrides = { eventId: 'evt_1', environment: 'production' };
void onAnomaly;

// the data map the builders' signatures use, nameable to type a builder's data up front
expectType<Equal<PaymentEventDataMap['refund.failed'], RefundFailedEventData>>();

// a known type with its data: typed data
const succeeded = buildEvent(
  'payment.succeeded',
  { trxId: 'trx_1', token: 'tok_1', amount: '1.00000000', currency: 'USD', status: 'SUCCESS', custom: 'order-1', merchantId: 1 },
  overrides,
);
const typed: BuiltEvent<'payment.succeeded', { trxId: string }> = succeeded;
expectType<Equal<typeof succeeded.data.trxId, string>>();
void typed;

// a known type with free-form data (a test of odd shapes): the data is not claimed to be typed
const odd = buildEvent('payment.succeeded', { orderRef: 42 });
expectType<Equal<typeof odd.data, Record<string, unknown>>>();
// @ts-expect-error trxId is not known to be there (it was typed string, and undefined at run time)
const length: number = odd.data.trxId.length;
void length;

// a type this version does not know: free-form data
const unknownType = buildEvent('chargeback.opened', { caseId: 'c_1' });
expectType<Equal<typeof unknownType.data, Record<string, unknown>>>();

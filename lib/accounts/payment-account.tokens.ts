import { Inject } from '@nestjs/common';
import { PaymentGatewayService } from '../client/payment-gateway.service.js';
import { DEFAULT_PAYMENT_ACCOUNT } from '../payment.constants.js';
import { WebhookEventStore } from '../stores/webhook-event-store.interface.js';

/*
 * Public tokens of one account. The default account (`forRoot()` without `account`) keeps
 * the class and symbol tokens users already inject (`PaymentGatewayService`,
 * `WebhookEventStore`); a named account answers only to its own string tokens, so
 * `app.get(PaymentGatewayService)` is always the default account's client.
 */

function isDefault(account: string | undefined): boolean {
  return account === undefined || account === DEFAULT_PAYMENT_ACCOUNT;
}

/**
 * Token of an account's `PaymentGatewayService`: the class itself for the default account,
 * a string for a named one. Use it with `moduleRef.get()` and `Test.overrideProvider()`.
 * @publicApi
 */
export function getPaymentGatewayToken(account?: string): typeof PaymentGatewayService | string {
  return isDefault(account) ? PaymentGatewayService : `nestjs-payment-gateway:${account}:PaymentGatewayService`;
}

/** Token of an account's resolved (validated, defaulted) options. @publicApi */
export function getPaymentOptionsToken(account?: string): string {
  return `nestjs-payment-gateway:${isDefault(account) ? DEFAULT_PAYMENT_ACCOUNT : account}:options`;
}

/** Token of an account's `WebhookEventStore`: the `WebhookEventStore` symbol for the default account. @publicApi */
export function getWebhookEventStoreToken(account?: string): symbol | string {
  return isDefault(account) ? WebhookEventStore : `nestjs-payment-gateway:${account}:WebhookEventStore`;
}

/**
 * Injects an account's `PaymentGatewayService`:
 * `constructor(@InjectPaymentGateway('eu') private readonly eu: PaymentGatewayService) {}`.
 * Without a name it injects the default account's client (same as no decorator).
 * @publicApi
 */
export function InjectPaymentGateway(account?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getPaymentGatewayToken(account));
}

/** Injects an account's resolved options (`ResolvedPaymentOptions`, secrets redacted from JSON and inspect). @publicApi */
export function InjectPaymentOptions(account?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getPaymentOptionsToken(account));
}

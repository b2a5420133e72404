import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getPaymentOptionsToken, type ResolvedPaymentOptions } from 'nestjs-payment-gateway';
import { AppModule } from './app.module.js';

/** `npm run sample:serve`: the shop against the service configured in `sample/.env` (or the environment). */
async function bootstrap(): Promise<void> {
  // rawBody: the webhook signature is computed over the exact bytes received.
  const app = await NestFactory.create(AppModule.register(), { rawBody: true, abortOnError: false });
  app.enableShutdownHooks();
  const port = Number(process.env.SHOP_PORT ?? 3000);
  const host = process.env.SHOP_HOST ?? '127.0.0.1';
  await app.listen(port, host);
  const url = await app.getUrl();
  const payment = app.get<ResolvedPaymentOptions>(getPaymentOptionsToken());
  const webhook =
    payment.webhookSecrets.length > 0
      ? `webhook route POST /${payment.webhookPath.replace(/^\/+/, '')}`
      : 'NO webhook route: set PAYMENT_WEBHOOK_SECRET, or orders will never be marked paid';
  // Only non-secret settings are printed.
  Logger.log(`Shop listening on ${url} (${webhook}; ${payment.environment} API at ${payment.apiBaseUrl})`, 'Shop');
}

bootstrap().catch((error: unknown) => {
  // Configuration errors name the variable at fault; secrets are never part of them.
  Logger.error(error instanceof Error ? error.message : String(error), undefined, 'Shop');
  process.exitCode = 1;
});

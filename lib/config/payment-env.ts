/**
 * Environment variables read by `PaymentModule.forRoot()`, with the option each one fills.
 * The README's configuration table lists the same names.
 */
export const PAYMENT_ENV_VARIABLES = {
  baseUrl: 'PAYMENT_BASE_URL',
  environment: 'PAYMENT_ENVIRONMENT',
  clientId: 'PAYMENT_CLIENT_ID',
  clientSecret: 'PAYMENT_CLIENT_SECRET',
  webhookSecret: 'PAYMENT_WEBHOOK_SECRET',
  webhookPath: 'PAYMENT_WEBHOOK_PATH',
  webhookToleranceSeconds: 'PAYMENT_WEBHOOK_TOLERANCE_SECONDS',
  webhookMaxBodyBytes: 'PAYMENT_WEBHOOK_MAX_BODY_BYTES',
  httpTimeoutMs: 'PAYMENT_HTTP_TIMEOUT_MS',
  maxRetries: 'PAYMENT_MAX_RETRIES',
  redisUrl: 'PAYMENT_REDIS_URL',
  webhookLeaseMs: 'PAYMENT_WEBHOOK_LEASE_MS',
  webhookRetentionMs: 'PAYMENT_WEBHOOK_RETENTION_MS',
  reconcile: 'PAYMENT_RECONCILE',
} as const;

export type PaymentEnvOptionKey = keyof typeof PAYMENT_ENV_VARIABLES;

/** Raw string values found in the environment, keyed by option name. */
export type PaymentEnvValues = Partial<Record<PaymentEnvOptionKey, string>>;

/** Reads every `PAYMENT_*` variable through `get` (ConfigService.get in the module); empty strings count as unset. */
export function readPaymentEnv(get: (name: string) => unknown): PaymentEnvValues {
  const values: PaymentEnvValues = {};
  for (const [option, name] of Object.entries(PAYMENT_ENV_VARIABLES) as [PaymentEnvOptionKey, string][]) {
    const raw = get(name);
    if (raw === undefined || raw === null) continue;
    const text = String(raw).trim();
    if (text !== '') values[option] = text;
  }
  return values;
}

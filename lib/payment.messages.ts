import { DEFAULT_PAYMENT_ACCOUNT } from './payment.constants.js';

/**
 * Messages shared by `payment.module.ts` and `config/` (the rest are written where they are
 * used). Each is a function so call sites pass only non-secret facts, never a secret value.
 */
export const PaymentMessages = {
  // the default account is named too: beside named accounts an error without a name points nowhere
  invalidConfiguration: (problems: string[], account?: string) =>
    `PaymentModule configuration${account === undefined ? '' : account === DEFAULT_PAYMENT_ACCOUNT ? ' of the default account' : ` of account '${account}'`} is invalid ` +
    `(${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
    problems.map((p) => `  - ${p}`).join('\n'),
  asyncOptionsMissingFactory: () =>
    'PaymentModule.forRootAsync() needs one of useFactory, useClass or useExisting.',
  bareModuleImport: () =>
    'imports: [PaymentModule] without forRoot() provides nothing (no webhook route, no PaymentGatewayService; ' +
    '@OnPaymentEvent handlers run only for accounts a forRoot() registers): import PaymentModule.forRoot() or ' +
    'forRootAsync() once (isGlobal: true makes it visible to every module), and remove this import',
} as const;

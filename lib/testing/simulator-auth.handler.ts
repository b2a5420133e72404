import { randomBytes } from 'node:crypto';
import type { SimulatorClock } from './simulator.clock.js';
import { SIMULATOR_TOKEN_TTL_MS } from './simulator.constants.js';
import { SimulatorHttpError } from './simulator.errors.js';
import type { SimulatorRateLimiter, SimulatorRateLimits } from './simulator-rate-limiter.js';
import type { PaymentTokenRequestOptions } from '../config/payment-module-options.interface.js';
import { readFormObject, readJsonObject, success, throwIfInvalid, type FieldErrors, type SimulatorAnswer, type SimulatorRequest } from './simulator-request.js';
import type { MerchantRecord, SimulatorState } from './simulator.state.js';

/** The caller behind a valid bearer token. */
export interface AuthenticatedCaller {
  merchant: MerchantRecord;
  token: string;
}

/**
 * `POST /authentication/token` and the bearer check of every other call. Credentials
 * work only on their own environment's base path, and so do the tokens they get.
 */
export class SimulatorAuthHandler {
  constructor(
    private readonly state: SimulatorState,
    private readonly clock: SimulatorClock,
    private readonly limiter: SimulatorRateLimiter,
    /** The token call's body it takes (the simulator's `tokenRequest` option). */
    private readonly tokenRequest: Partial<PaymentTokenRequestOptions> = {},
  ) {}

  issueToken(req: SimulatorRequest): SimulatorAnswer {
    this.limiter.enforce('tokenPerMinute', req.ip);
    const { clientIdField = 'client_id', clientSecretField = 'client_secret', encoding = 'json' } = this.tokenRequest;
    const body: Record<string, unknown> = encoding === 'form' ? readFormObject(req) : readJsonObject(req);
    const errors: FieldErrors = {};
    const clientId = body[clientIdField];
    const clientSecret = body[clientSecretField];
    if (typeof clientId !== 'string' || !clientId) errors[clientIdField] = [`The ${clientIdField} field is required.`];
    if (typeof clientSecret !== 'string' || !clientSecret) errors[clientSecretField] = [`The ${clientSecretField} field is required.`];
    throwIfInvalid(errors);
    const merchant = this.state.merchantByClientId(clientId as string);
    if (!merchant || merchant.settings.clientSecret !== clientSecret) throw new SimulatorHttpError('PAY_1004');
    if (!merchant.active) throw new SimulatorHttpError('PAY_6001');
    if (merchant.settings.mode !== req.mode) throw new SimulatorHttpError('PAY_1005');
    const token = `sim_${randomBytes(24).toString('hex')}`;
    this.state.tokens.set(token, { merchantId: merchant.settings.merchantId, mode: req.mode, issuedAt: this.clock.now() });
    return success(200, { access_token: token, token_type: 'Bearer', expires_in: SIMULATOR_TOKEN_TTL_MS / 1000 });
  }

  /**
   * `authenticate`, then counts the call against the `scope` limit: money movement per
   * client id (the merchant), every other scope per access token.
   */
  authorize(req: SimulatorRequest, scope: Exclude<keyof SimulatorRateLimits, 'tokenPerMinute'>): AuthenticatedCaller {
    const caller = this.authenticate(req);
    this.limiter.enforce(scope, scope === 'moneyMovementPerMinute' ? caller.merchant.settings.clientId : caller.token);
    return caller;
  }

  /** The merchant of the request's bearer token, or the matching `PAY_1xxx` / `PAY_2003` / `PAY_6001` error. */
  authenticate(req: SimulatorRequest): AuthenticatedCaller {
    const header = req.headers.authorization;
    // PAY_1001 is "no Authorization header sent"; one that carries no usable token matches no session
    if (typeof header !== 'string' || header.trim() === '') throw new SimulatorHttpError('PAY_1001');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw new SimulatorHttpError('PAY_1002');
    const token = this.state.tokens.get(m[1]);
    if (!token) throw new SimulatorHttpError('PAY_1002');
    // expired when issued MORE than the lifetime ago
    if (this.clock.now() > token.issuedAt + SIMULATOR_TOKEN_TTL_MS) throw new SimulatorHttpError('PAY_1003');
    if (token.mode !== req.mode) throw new SimulatorHttpError('PAY_2003');
    const merchant = this.state.merchants.get(token.merchantId);
    if (!merchant?.active) throw new SimulatorHttpError('PAY_6001');
    return { merchant, token: m[1] };
  }
}

import type { SimulatorAuthHandler } from './simulator-auth.handler.js';
import { SimulatorHttpError } from './simulator.errors.js';
import type { SimulatorPaymentsHandler } from './simulator-payments.handler.js';
import type { SimulatorPayoutsHandler } from './simulator-payouts.handler.js';
import type { SimulatorRefundsHandler } from './simulator-refunds.handler.js';
import { decodePathSegment, type SimulatorAnswer, type SimulatorRequest } from './simulator-request.js';
import type { SimulatorSubaccountsHandler } from './simulator-subaccounts.handler.js';

/**
 * The simulator's routes, an id segment as `{id}` (those are matched in `route()` below): what a
 * string fault path must not be only the end of.
 */
export const SIMULATOR_ROUTE_SHAPES: readonly string[] = [
  '/authentication/token',
  '/payment/create',
  '/payment/status',
  '/payments/gateways',
  '/payout',
  '/subaccounts',
  '/payment/{id}/refund',
  '/refund/{id}',
  '/payout/{id}',
];

export interface SimulatorHandlers {
  auth: SimulatorAuthHandler;
  payments: SimulatorPaymentsHandler;
  refunds: SimulatorRefundsHandler;
  payouts: SimulatorPayoutsHandler;
  subaccounts: SimulatorSubaccountsHandler;
}

/**
 * Sends each route to its handler. A known path with the wrong method is a 405 with
 * `Allow`; an unknown path is a 404 `NOT_FOUND`. Handlers throw `SimulatorHttpError`
 * for error answers.
 */
export class SimulatorRouter {
  constructor(private readonly handlers: SimulatorHandlers) {}

  /** Brings time-driven state up to date: before a request is looked at, and after `advanceTime`. */
  catchUp(): void {
    this.handlers.payments.expireStaleSessions();
  }

  route(req: SimulatorRequest): SimulatorAnswer {
    const { auth, payments, refunds, payouts, subaccounts } = this.handlers;
    const allow = (method: string): void => {
      if (req.method !== method) throw new SimulatorHttpError('METHOD_NOT_ALLOWED', undefined, {}, 405, { allow: method });
    };
    switch (req.route) {
      case '/authentication/token':
        allow('POST');
        return auth.issueToken(req);
      case '/payment/create':
        allow('POST');
        return payments.create(req);
      case '/payment/status':
        allow('GET');
        return payments.status(req);
      case '/payments/gateways':
        allow('GET');
        return payments.gateways(req);
      case '/payout':
        allow('POST');
        return payouts.create(req);
      case '/subaccounts':
        allow('GET');
        return subaccounts.list(req);
    }
    let m: RegExpExecArray | null;
    if ((m = /^\/payment\/([^/]+)\/refund$/.exec(req.route))) {
      allow('POST');
      return refunds.create(req, decodePathSegment(m[1]));
    }
    if ((m = /^\/refund\/([^/]+)$/.exec(req.route))) {
      allow('GET');
      return refunds.lookup(req, decodePathSegment(m[1]));
    }
    if ((m = /^\/payout\/([^/]+)$/.exec(req.route))) {
      allow('GET');
      return payouts.lookup(req, decodePathSegment(m[1]));
    }
    throw new SimulatorHttpError('NOT_FOUND');
  }
}

import type { WireErrorEnvelope } from '../client/payment-wire.types.js';
import { deepFreeze } from './simulator.constants.js';

/** HTTP status and message of every documented `PAY_*` code, plus the simulator's own codes for cases the service leaves open. @publicApi */
// frozen to the leaves: one test changing an entry would change every simulator in the process
export const SIMULATOR_ERROR_TABLE: Readonly<Record<string, Readonly<{ status: number; message: string }>>> = deepFreeze({
  PAY_1001: { status: 401, message: 'Access denied! Token not found' },
  PAY_1002: { status: 403, message: 'Requested with invalid token!' },
  PAY_1003: { status: 401, message: 'Request token is expired' },
  PAY_1004: { status: 401, message: 'Requested credentials is invalid' },
  PAY_1005: { status: 400, message: 'Requested with invalid credentials' },
  PAY_2001: { status: 404, message: 'Payment order not found.' },
  PAY_2002: { status: 400, message: 'Payment request is invalid!' },
  PAY_2003: { status: 400, message: 'Mode mismatch' },
  PAY_2004: { status: 422, message: 'Only completed payments can be refunded.' },
  PAY_2005: { status: 404, message: 'Refund not found.' },
  PAY_2006: { status: 422, message: 'Refund not supported for this provider.' },
  PAY_3001: { status: 422, message: 'Payout request failed.' },
  PAY_3002: { status: 404, message: 'Payout not found.' },
  PAY_4000: { status: 400, message: 'Validation failed.' },
  PAY_5001: { status: 500, message: 'Failed to create access token. Please try again.' },
  PAY_5002: { status: 400, message: 'Failed to create payment! Please try again.' },
  PAY_5003: { status: 500, message: 'Provider error.' },
  PAY_6001: { status: 400, message: "Merchant doesn't exist or credentials are invalid." },
  // The service names no code for these; the simulator's choices (documented in the README's simulator section).
  RATE_LIMITED: { status: 429, message: 'Too many requests.' },
  NOT_FOUND: { status: 404, message: 'No such endpoint.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed on this endpoint.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'Request body too large.' },
  MALFORMED_REQUEST: { status: 400, message: 'Malformed HTTP request.' },
  HEADERS_TOO_LARGE: { status: 431, message: 'Request headers too large.' },
  INTERNAL_ERROR: { status: 500, message: 'Internal server error.' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'Service unavailable.' },
});

/** Code used for an injected status fault when the test gives none. */
export function defaultCodeForStatus(status: number): string {
  if (status === 429) return 'RATE_LIMITED';
  if (status === 503) return 'SERVICE_UNAVAILABLE';
  if (status === 404) return 'NOT_FOUND';
  if (status === 401) return 'PAY_1001';
  if (status === 403) return 'PAY_1002';
  if (status === 422) return 'PAY_3001';
  if (status >= 400 && status < 500) return 'PAY_4000';
  return 'INTERNAL_ERROR';
}

/** Thrown inside request handlers; the server answers it as the error envelope `{ status: 'error', code, message, errors, data: [] }`. */
export class SimulatorHttpError extends Error {
  readonly status: number;
  constructor(
    readonly code: string,
    message?: string,
    readonly errors: Record<string, string[]> = {},
    status?: number,
    readonly headers: Record<string, string> = {},
  ) {
    super(message ?? SIMULATOR_ERROR_TABLE[code]?.message ?? code);
    this.name = 'SimulatorHttpError';
    this.status = status ?? SIMULATOR_ERROR_TABLE[code]?.status ?? 500;
  }

  toEnvelope(): WireErrorEnvelope {
    return { status: 'error', code: this.code, message: this.message, errors: this.errors, data: [] };
  }
}

import type { PaymentServiceSimulator, SimulatedMode } from '../../lib/testing/index.js';

/** Raw answer of one simulator call. */
export interface SimCall {
  status: number;
  headers: Headers;
  body: any;
}

/** One HTTP call to the simulator's API (`route` is the path after `/api/v1`). */
export async function simCall(
  sim: PaymentServiceSimulator,
  method: string,
  route: string,
  opts: { token?: string; body?: unknown; rawBody?: string; mode?: SimulatedMode; headers?: Record<string, string> } = {},
): Promise<SimCall> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(`${sim.apiUrl(opts.mode ?? 'sandbox')}${route}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** A fresh access token of the default sandbox merchant (or given credentials). */
export async function simToken(
  sim: PaymentServiceSimulator,
  creds: { clientId?: string; clientSecret?: string; mode?: SimulatedMode } = {},
): Promise<string> {
  const r = await simCall(sim, 'POST', '/authentication/token', {
    mode: creds.mode,
    body: { client_id: creds.clientId ?? 'sandbox-client', client_secret: creds.clientSecret ?? 'sandbox-secret' },
  });
  if (r.status !== 200) throw new Error(`token call failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data.access_token as string;
}

let keySeq = 0;
/** A valid create-payment body with a fresh idempotency key. */
export function paymentBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  keySeq++;
  return { amount: '25.50', currency: 'USD', idempotency_key: `key-${keySeq}-${Date.now()}`, custom: `order-${keySeq}`, ...overrides };
}

import { type ClientRequest, Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
// node:timers, not the globals: jest's fake timers replace those, and the simulator runs on real time
import { clearTimeout, setTimeout } from 'node:timers';

/** How much of a receiver's answer the delivery log keeps. */
const RESPONSE_BODY_LOG_BYTES = 1024;

/** The receiver's status and the start of its answer, or why there was none. */
export type PostOutcome = { status: number; body: string } | { error: string };

/**
 * The simulator's HTTP side of webhook delivery: one signed POST at a time, on its own
 * keep-alive agents, so {@link stop} can end every request and socket it opened.
 */
export class SimulatorWebhookPoster {
  private readonly inFlight = new Set<ClientRequest>();
  private httpAgent = new HttpAgent({ keepAlive: true });
  private httpsAgent = new HttpsAgent({ keepAlive: true });

  constructor(private readonly timeoutMs: number) {}

  /** Ends the requests in flight and closes every socket. */
  stop(): void {
    for (const req of this.inFlight) req.destroy(new Error('simulator stopped'));
    this.inFlight.clear();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** New agents after {@link stop} (the simulator was restarted). */
  resume(): void {
    this.httpAgent = new HttpAgent({ keepAlive: true });
    this.httpsAgent = new HttpsAgent({ keepAlive: true });
  }

  /**
   * One POST; resolves with the status, or the reason there was none. Redirects are
   * not followed: only a 2xx answer counts as delivered, so a 3xx is a failed attempt.
   */
  post(url: string, body: string, signature: string): Promise<PostOutcome> {
    return new Promise((resolve) => {
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        resolve({ error: `invalid webhook URL ${JSON.stringify(url)}` });
        return;
      }
      const https = target.protocol === 'https:';
      if (!https && target.protocol !== 'http:') {
        resolve({ error: `unsupported webhook URL protocol ${target.protocol}` });
        return;
      }
      let settled = false;
      const finish = (value: PostOutcome): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.inFlight.delete(req);
        resolve(value);
      };
      const req = (https ? httpsRequest : httpRequest)(
        target,
        {
          method: 'POST',
          agent: https ? this.httpsAgent : this.httpAgent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-service-signature': signature,
            'user-agent': 'payment-service-simulator',
          },
        },
        (res) => {
          // Read it all (keep-alive reuse) but keep only the start of the answer for the log.
          const kept: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            if (size < RESPONSE_BODY_LOG_BYTES) kept.push(chunk.subarray(0, RESPONSE_BODY_LOG_BYTES - size));
            size += chunk.length;
          });
          const answered = () => ({ status: res.statusCode ?? 0, body: Buffer.concat(kept).toString('utf8') });
          res.on('end', () => finish(answered()));
          res.on('error', (err) => finish({ error: deliveryErrorText(err) }));
          res.on('close', () => finish(res.complete ? answered() : { error: 'response aborted' }));
        },
      );
      const timer = setTimeout(() => {
        req.destroy();
        finish({ error: `timed out after ${this.timeoutMs} ms` });
      }, this.timeoutMs);
      this.inFlight.add(req);
      req.on('error', (err) => finish({ error: deliveryErrorText(err) }));
      req.end(body);
    });
  }
}

/** `ECONNREFUSED`-style text for network errors. */
function deliveryErrorText(err: unknown): string {
  // Duck-typed: errors may come from another realm (jest VM), where instanceof fails.
  if (!err || typeof err !== 'object') return String(err);
  const e = err as { code?: unknown; message?: unknown };
  if (typeof e.code === 'string') return e.code;
  return typeof e.message === 'string' ? e.message : String(err);
}

import { Logger } from '@nestjs/common';
import { describeError } from '../common/error-message.util.js';

let reported = false;

/**
 * Called from the `catch` around each piece of telemetry work. Telemetry must never change
 * what the module does: a span processor or exporter of the host that throws (the SDK calls
 * `onStart`/`onEnd` synchronously and does not catch) would otherwise turn a refund that
 * succeeded into an error, or fail a handler that ran, so that it runs again. The error is
 * dropped; the first one of the process is logged.
 */
export function telemetryFailed(error: unknown): void {
  if (reported) return;
  reported = true;
  new Logger('PaymentTelemetry').error(
    `The OpenTelemetry SDK threw while the module recorded telemetry (${describeError(error)}); ` +
      'the module goes on without that span or measurement. Later failures are not logged.',
  );
}

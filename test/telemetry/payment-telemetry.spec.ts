import { PaymentTelemetry } from '../../lib/telemetry/payment-telemetry.js';
import { disableOtelGlobals, registerTestOtel } from '../support/otel-sdk.js';

// "No cost without an SDK": with only the API's no-op providers, PaymentTelemetry hands out
// nothing, so the request path builds no instruments, attribute objects or spans.
describe('PaymentTelemetry', () => {
  beforeEach(() => disableOtelGlobals());
  afterAll(() => disableOtelGlobals());

  it('gives no instruments and no tracer while no SDK is registered', () => {
    const telemetry = new PaymentTelemetry();
    expect(telemetry.instruments()).toBeUndefined();
    expect(telemetry.tracer()).toBeUndefined();
  });

  it("follows the host's SDK: instruments and a tracer once it registers one (after the module was built), none after it is removed", async () => {
    const telemetry = new PaymentTelemetry();
    expect(telemetry.instruments()).toBeUndefined();
    const otel = await registerTestOtel();
    try {
      const instruments = telemetry.instruments();
      expect(instruments).toBeDefined();
      expect(telemetry.tracer()).toBeDefined();
      // built once per provider, not per call
      expect(telemetry.instruments()).toBe(instruments);
    } finally {
      await otel.reset();
    }
    expect(telemetry.instruments()).toBeUndefined();
    expect(telemetry.tracer()).toBeUndefined();
  });
});

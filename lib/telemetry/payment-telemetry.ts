import {
  type Counter,
  createNoopMeter,
  type Histogram,
  type Meter,
  type MeterProvider,
  metrics,
  ProxyTracerProvider,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { PAYMENT_TELEMETRY_SCOPE, PaymentMetricName } from './payment-telemetry.names.js';
import { telemetryFailed } from './telemetry-fault.js';

/** The package's instruments, all from one meter. */
export interface PaymentInstruments {
  webhookRequests: Counter;
  webhookDuration: Histogram;
  clientRequests: Counter;
  clientDuration: Histogram;
  clientRetries: Counter;
  clientRateLimitWait: Histogram;
  queueJobs: Counter;
  queueDuration: Histogram;
  queueDeadLetters: Counter;
}

// What the API answers when no SDK is registered: the same singletons every time.
const NOOP_METER = createNoopMeter();
const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();

// Buckets in seconds: a webhook answers in milliseconds, a call to the service may take
// seconds, and a rate-limit wait up to a minute (the service's windows are per minute).
const WEBHOOK_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const CLIENT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const WAIT_BUCKETS = [0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * The package's access to the host's OpenTelemetry SDK, through the global API only.
 *
 * Meters are not proxied by the API: instruments made before the host registers its SDK
 * would stay no-ops forever. So nothing is taken at import or construction time: every use
 * asks the API for the current global provider (a property lookup, no allocation) and
 * builds the meter, instruments or tracer again only when that provider changed. With no
 * SDK both methods return `undefined`, and callers skip all telemetry work: no attribute
 * objects, spans or closures on the request path.
 */
export class PaymentTelemetry {
  private meterProvider: MeterProvider | undefined;
  private currentInstruments: PaymentInstruments | undefined;
  private tracerProvider: TracerProvider | undefined;
  private currentTracer: Tracer | undefined;

  /** The instruments of the registered MeterProvider; `undefined` when there is none. */
  instruments(): PaymentInstruments | undefined {
    const provider = metrics.getMeterProvider();
    if (provider !== this.meterProvider) {
      this.meterProvider = provider;
      try {
        const meter = provider.getMeter(PAYMENT_TELEMETRY_SCOPE);
        this.currentInstruments = meter === NOOP_METER ? undefined : createInstruments(meter);
      } catch (error) {
        telemetryFailed(error);
        this.currentInstruments = undefined;
      }
    }
    return this.currentInstruments;
  }

  /** A tracer of the registered TracerProvider; `undefined` when there is none. */
  tracer(): Tracer | undefined {
    const global = trace.getTracerProvider();
    // The global is the API's proxy; what the host registered is its delegate.
    const provider = typeof (global as Partial<ProxyTracerProvider>).getDelegate === 'function' ? (global as ProxyTracerProvider).getDelegate() : global;
    if (provider !== this.tracerProvider) {
      this.tracerProvider = provider;
      try {
        this.currentTracer = provider === NOOP_TRACER_PROVIDER ? undefined : provider.getTracer(PAYMENT_TELEMETRY_SCOPE);
      } catch (error) {
        telemetryFailed(error);
        this.currentTracer = undefined;
      }
    }
    return this.currentTracer;
  }
}

function createInstruments(meter: Meter): PaymentInstruments {
  return {
    webhookRequests: meter.createCounter(PaymentMetricName.WEBHOOK_REQUESTS, {
      description: 'Webhook deliveries answered, by outcome',
      unit: '{request}',
    }),
    webhookDuration: meter.createHistogram(PaymentMetricName.WEBHOOK_DURATION, {
      description: 'Time from a webhook delivery reaching the module to its answer',
      unit: 's',
      advice: { explicitBucketBoundaries: WEBHOOK_BUCKETS },
    }),
    clientRequests: meter.createCounter(PaymentMetricName.CLIENT_REQUESTS, {
      description: 'Calls to the payment service (a call and its retries count once), by outcome',
      unit: '{request}',
    }),
    clientDuration: meter.createHistogram(PaymentMetricName.CLIENT_DURATION, {
      description: 'Time of one call to the payment service, retries, backoff and rate-limit waits included',
      unit: 's',
      advice: { explicitBucketBoundaries: CLIENT_BUCKETS },
    }),
    clientRetries: meter.createCounter(PaymentMetricName.CLIENT_RETRIES, {
      description: 'Attempts repeated after a failure, by the code of the failure',
      unit: '{retry}',
    }),
    clientRateLimitWait: meter.createHistogram(PaymentMetricName.CLIENT_RATE_LIMIT_WAIT, {
      description: 'Wait for a client-side rate-limit slot, per attempt',
      unit: 's',
      advice: { explicitBucketBoundaries: WAIT_BUCKETS },
    }),
    queueJobs: meter.createCounter(PaymentMetricName.QUEUE_JOBS, {
      description: 'Attempts of event jobs run by this worker, by outcome',
      unit: '{attempt}',
    }),
    queueDuration: meter.createHistogram(PaymentMetricName.QUEUE_DURATION, {
      description: 'Time of one attempt of an event job: claim, handlers and completion',
      unit: 's',
      advice: { explicitBucketBoundaries: CLIENT_BUCKETS },
    }),
    queueDeadLetters: meter.createCounter(PaymentMetricName.QUEUE_DEAD_LETTERS, {
      description: 'Events that failed their last attempt and became dead letters',
      unit: '{event}',
    }),
  };
}

/** The one instance every account and client of the process uses (the providers are global too). */
export const paymentTelemetry = new PaymentTelemetry();

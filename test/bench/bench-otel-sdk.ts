// `BENCH_OTEL=sdk npm run bench -- --only=1`: the bench app registers the OpenTelemetry SDK
// the way a traced host does (AsyncLocalStorage context, batch span processor, periodic
// metric reader), exporting to memory; the exporters are emptied every second so memory
// stays flat. Without the flag nothing is registered and the module runs on the API's no-ops.
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';

/** Whether this run measures the module with an SDK registered. */
export const BENCH_WITH_OTEL_SDK = process.env.BENCH_OTEL === 'sdk';

/** Registers the SDK when `BENCH_OTEL=sdk`; call before the app is created, like a host's tracing setup. */
export function registerBenchOtelSdk(): void {
  if (!BENCH_WITH_OTEL_SDK) return;
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const spanExporter = new InMemorySpanExporter();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  metrics.setGlobalMeterProvider(
    new MeterProvider({ readers: [new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 1000 })] }),
  );
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(spanExporter)] }));
  setInterval(() => {
    spanExporter.reset();
    metricExporter.reset();
  }, 1000).unref();
}

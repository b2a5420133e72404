// The real OpenTelemetry SDK with in-memory exporters, registered as the global providers
// the way a host's tracing setup does; `reset()` removes every global again.
import { type Attributes, context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';

export interface TestOtel {
  /** Every metric of the package's meter, as exported now (cumulative since registration). */
  collect(): Promise<MetricData[]>;
  /** Finished spans, in the order they ended. */
  spans(): ReadableSpan[];
  /** Unregisters the providers and the context manager, and shuts the SDK down. */
  reset(): Promise<void>;
}

/** `spanProcessors` run after the in-memory exporter's (a test's faulty processor, say). */
export async function registerTestOtel(spanProcessors: SpanProcessor[] = []): Promise<TestOtel> {
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // a long interval: exports happen only when the test flushes
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter), ...spanProcessors] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  if (!context.setGlobalContextManager(contextManager)) throw new Error('a context manager is already registered');
  if (!metrics.setGlobalMeterProvider(meterProvider)) throw new Error('a MeterProvider is already registered');
  if (!trace.setGlobalTracerProvider(tracerProvider)) throw new Error('a TracerProvider is already registered');
  return {
    async collect() {
      metricExporter.reset();
      await reader.forceFlush();
      const exports = metricExporter.getMetrics();
      const last = exports[exports.length - 1];
      return (last?.scopeMetrics ?? []).filter((s) => s.scope.name === 'nestjs-payment-gateway').flatMap((s) => s.metrics);
    },
    spans: () => spanExporter.getFinishedSpans(),
    async reset() {
      metrics.disable();
      trace.disable();
      context.disable();
      contextManager.disable();
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    },
  };
}

/** Removes any global OpenTelemetry registration (a test file's start and end). */
export function disableOtelGlobals(): void {
  metrics.disable();
  trace.disable();
  context.disable();
}

/** Data points of the metric `name`, as `{ attributes, value }`. */
export function pointsOf<T = number>(all: MetricData[], name: string): Array<{ attributes: Attributes; value: T }> {
  const metric = all.find((m) => m.descriptor.name === name);
  return ((metric?.dataPoints ?? []) as Array<DataPoint<T>>).map((p) => ({ attributes: p.attributes, value: p.value }));
}

/** Counter points as `{ ...attributes, value }`, in `byAttributes` order: compare with `toEqual(byAttributes([...]))`. */
export function counterPoints(all: MetricData[], name: string): Array<Record<string, unknown>> {
  return byAttributes(pointsOf<number>(all, name).map((p) => ({ ...p.attributes, value: p.value })));
}

/** Histogram points as `{ ...attributes, count }`, in `byAttributes` order. */
export function histogramCounts(all: MetricData[], name: string): Array<Record<string, unknown>> {
  return byAttributes(pointsOf<Histogram>(all, name).map((p) => ({ ...p.attributes, count: p.value.count })));
}

/** Every string reachable in the exported telemetry: attribute values, event attributes, span names, status messages. */
export function telemetryTexts(all: MetricData[], spans: ReadableSpan[]): string[] {
  const texts: string[] = [];
  const add = (attributes: Attributes | undefined) => {
    for (const [key, value] of Object.entries(attributes ?? {})) texts.push(`${key}=${String(value)}`);
  };
  for (const metric of all) for (const point of metric.dataPoints) add(point.attributes);
  for (const span of spans) {
    texts.push(span.name, span.status.message ?? '');
    add(span.attributes);
    for (const event of span.events) add(event.attributes);
  }
  return texts;
}

/** Entries in a fixed order (by their keys and values), so expected lists can be written in any order. */
export function byAttributes<T extends Record<string, unknown>>(entries: T[]): T[] {
  const key = (e: T) => JSON.stringify(Object.entries(e).sort(([a], [b]) => a.localeCompare(b)));
  return [...entries].sort((a, b) => key(a).localeCompare(key(b)));
}

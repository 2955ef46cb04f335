import { BEARER_TOKEN } from '../config/parsers';
import { defineSlice, derive, integer, oneOf, text } from '../config/settings';

/** Prometheus metrics and OpenTelemetry traces (docs/operations.md). */
export const opsConfig = defineSlice({
  /** Prometheus metrics (docs/operations.md, "Metrics"). */
  metrics: {
    /** Bearer token GET /metrics requires; null: open, as Prometheus targets usually are. */
    token: text('METRICS_TOKEN', BEARER_TOKEN).to((token) => token ?? null),
    /** A listener of its own for GET /metrics, on every role (a worker has no other HTTP server); null when METRICS_PORT is 0. */
    port: integer('METRICS_PORT', { min: 0, max: 65535, default: 0 }).to((port) => port || null),
  },
  /**
   * OpenTelemetry traces (docs/operations.md, "Tracing"): on when an OTLP endpoint is set and
   * OTEL_SDK_DISABLED is not true (OpenTelemetry's standard switch). The SDK reads its other
   * OTEL_* variables itself.
   */
  tracing: {
    enabled: derive(
      [
        text('OTEL_EXPORTER_OTLP_ENDPOINT', { pattern: /^https?:\/\/\S+$/, message: 'must be an http(s) URL, such as http://otel-collector:4318' }),
        // The traces signal's own endpoint: the full URL, /v1/traces included.
        text('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', {
          pattern: /^https?:\/\/\S+$/,
          message: 'must be an http(s) URL, such as http://otel-collector:4318/v1/traces',
        }),
        oneOf('OTEL_SDK_DISABLED', ['true', 'false', 'TRUE', 'FALSE']),
      ],
      ([endpoint, tracesEndpoint, disabled]) => Boolean(endpoint || tracesEndpoint) && disabled?.toLowerCase() !== 'true',
    ),
  },
});

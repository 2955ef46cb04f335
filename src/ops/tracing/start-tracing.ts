import { AppConfig } from '../../config/app-config';
import { enableTraces } from './traces';

let stop: (() => Promise<void>) | undefined;

/**
 * Starts the OpenTelemetry SDK when the configuration turns tracing on (an OTLP endpoint set):
 * spans only (metrics stay Prometheus's, logs stay pino's), exported as the standard OTEL_*
 * variables say (OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_TRACES_SAMPLER, OTEL_BSP_*, ...). Off, the SDK
 * is not even loaded. The spans are the service's own (traces.ts), so nothing needs patching and
 * this may run at any point before the app is built.
 */
export async function startTracing(config: AppConfig): Promise<void> {
  if (!config.tracing.enabled || stop) return;
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const { defaultResource, resourceFromAttributes } = await import('@opentelemetry/resources');
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME ? undefined : 'messaging-sync',
    resource: defaultResource().merge(resourceFromAttributes({ 'service.role': config.processRole, 'deployment.environment.name': config.appEnv })),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  enableTraces();
  stop = () => sdk.shutdown();
}

/** Exports the spans still buffered and stops the SDK (at shutdown). */
export async function stopTracing(): Promise<void> {
  const current = stop;
  stop = undefined;
  await current?.();
}

import { Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { stopTracing } from './start-tracing';

/** Exports the spans still buffered when the process stops (nothing when tracing is off). */
@Injectable()
export class TracingShutdown implements OnApplicationShutdown {
  onApplicationShutdown(): Promise<void> {
    return stopTracing();
  }
}

/** OpenTelemetry traces (docs/operations.md, "Tracing"); started in main.ts, before the app. */
@Module({ providers: [TracingShutdown] })
export class TracingModule {}

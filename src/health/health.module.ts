import { Global, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DatabaseProbe } from './database-probe';
import { HealthController } from './health.controller';
import { QueueProbe } from './queue-probe';
import { Readiness } from './readiness';
import { ReadinessChecks } from './readiness-checks';

/** /health (liveness) and /ready (readiness); features add checks to /ready through ReadinessChecks. */
@Global()
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [DatabaseProbe, QueueProbe, ReadinessChecks, Readiness],
  exports: [ReadinessChecks],
})
export class HealthModule {}

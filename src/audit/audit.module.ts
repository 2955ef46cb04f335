import { Global, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { AuditInterceptor } from './audit.interceptor';
import { AuditEvents } from './audit-events.service';
import { AuditEventsRepository } from './audit-events.repository';
import { AuditRetention } from './audit-retention';
import { AuditTrail } from './audit-trail.service';

/**
 * The audit trail (docs/decisions.md, "The audit trail"): the row of every changing call, written
 * in the transaction of the change; listed for the admin API and the Settings page; pruned after
 * AUDIT_RETENTION_DAYS. Global: the MCP tool surface opens its calls through AuditTrail.
 */
@Global()
@Module({
  providers: [AuditEventsRepository, AuditTrail, AuditEvents, AuditRetention, { provide: APP_INTERCEPTOR, useClass: AuditInterceptor }],
  exports: [AuditTrail, AuditEvents],
})
export class AuditModule {}

import { Inject, Injectable } from '@nestjs/common';
import { NotFoundError, ValidationError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { OrgDeliveryLogRetentionRepository } from './org-delivery-log-retention.repository';

const DAY_MS = 86_400_000;

/** An org's delivery log retention, as the admin API answers it. */
export interface DeliveryLogRetentionReport {
  orgId: string;
  /**
   * Days the org's finished deliveries are kept, as retention applies it: its own setting, unless
   * DELIVERY_LOG_RETENTION_DAYS is lower (lowered after the org's was set) or 0 (forever).
   */
  retentionDays: number;
  /** 'org' when the org's own setting is what applies; 'default' when DELIVERY_LOG_RETENTION_DAYS is. */
  source: 'default' | 'org';
  /** The org's own setting as stored (null: none), which may be more than applies. */
  orgRetentionDays: number | null;
  /** DELIVERY_LOG_RETENTION_DAYS, the installation's. */
  defaultRetentionDays: number;
}

/**
 * Per-org retention of the delivery log (docs/delivery-log.md, "Retention"): an org may keep its
 * finished deliveries for fewer days than DELIVERY_LOG_RETENTION_DAYS, never more (whole days of
 * every org are dropped at the global cutoff). Its older rows cannot go with a partition, which
 * holds every org's day: DeliveryLogRetention deletes them in batches (OrgDeliveryLogRetentionRepository.deleteBatch).
 */
@Injectable()
export class OrgDeliveryLogRetention {
  constructor(
    private readonly repository: OrgDeliveryLogRetentionRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async report(orgId: string): Promise<DeliveryLogRetentionReport> {
    const days = await this.repository.days(orgId);
    if (days === undefined) throw NotFoundError.of('org', orgId, 'orgId');
    const defaultRetentionDays = this.config.delivery.logRetentionDays;
    const own = days !== null && defaultRetentionDays > 0 && days < defaultRetentionDays;
    return { orgId, retentionDays: own ? days : defaultRetentionDays, source: own ? 'org' : 'default', orgRetentionDays: days, defaultRetentionDays };
  }

  /** Days the org's finished deliveries are kept (report's retentionDays; 0: forever). */
  async daysOf(orgId: string): Promise<number> {
    return (await this.report(orgId)).retentionDays;
  }

  /** An operator's retention for one org (`null`: back to DELIVERY_LOG_RETENTION_DAYS). */
  async set(orgId: string, days: number | null): Promise<DeliveryLogRetentionReport> {
    const global = this.config.delivery.logRetentionDays;
    if (days !== null && global === 0)
      throw new ValidationError(
        'DELIVERY_LOG_RETENTION_DAYS is 0: the delivery log is kept forever and retention does not run; set it to a number of days to give an org a shorter one',
        'days',
      );
    if (days !== null && days > global)
      throw new ValidationError(`days must be at most DELIVERY_LOG_RETENTION_DAYS (${global}): an org's delivery log is kept no longer than that`, 'days');
    if (!(await this.repository.setDays(orgId, days))) throw NotFoundError.of('org', orgId, 'orgId');
    return this.report(orgId);
  }

  /** The orgs whose own retention is shorter than DELIVERY_LOG_RETENTION_DAYS, each with its cutoff. */
  async shorterThanGlobal(now: Date): Promise<Array<{ orgId: string; cutoff: Date }>> {
    const global = this.config.delivery.logRetentionDays;
    if (global === 0) return [];
    return (await this.repository.orgsUnder(global)).map((r) => ({ orgId: r.id, cutoff: new Date(now.getTime() - r.days * DAY_MS) }));
  }
}

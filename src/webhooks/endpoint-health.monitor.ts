import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { ServiceMailer } from '../common/service-mailer';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';
import { EndpointNotice, WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { AUTO_DISABLE_CONSECUTIVE_FAILURES, WebhooksService } from './webhooks.service';

/** An endpoint failing this long gets its owner one email per failing run. */
export const FAILING_NOTICE_AFTER_MS = 60 * 60 * 1000;

/** Emails sent in one check at most; the rest go in the next. */
const NOTICES_PER_CHECK = 50;

/**
 * On a timer, in worker processes (ENDPOINT_HEALTH_INTERVAL_MS): disables endpoints whose failing
 * run has lasted 24 hours even when no attempt fails any more, and tells owners by email
 * (ServiceMailer, SMTP_URL) when the service disabled their endpoint and, once per failing run,
 * when it has been failing for an hour (docs/webhooks.md, "Telling the owner").
 */
@Injectable()
export class EndpointHealthMonitor implements OnModuleInit {
  private readonly logger = new Logger(EndpointHealthMonitor.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly webhooks: WebhooksService,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly mailer: ServiceMailer,
    private readonly clock: Clock,
    private readonly work: BackgroundWork,
  ) {}

  onModuleInit(): void {
    this.work.every({
      name: 'endpoint health check',
      roles: WORKER_ROLES,
      everyMs: this.config.webhooks.healthIntervalMs,
      setting: 'ENDPOINT_HEALTH_INTERVAL_MS',
      logger: this.logger,
      run: () => this.check(),
    });
  }

  /** One check: the endpoints it disabled, and the emails it sent (or logged, in development). */
  async check(): Promise<{ disabled: string[]; notified: number }> {
    const now = this.clock.now();
    const disabled = await this.webhooks.disableLongFailing(now);
    if (disabled.length > 0) this.logger.log(`disabled ${disabled.length} endpoint(s) failing for 24 hours: ${disabled.join(', ')}`);
    return { disabled, notified: await this.sendNotices(now) };
  }

  /**
   * Each due email is sent while its endpoint's row is locked and marked sent in the same
   * transaction: two workers never both send it, and one that dies after sending sends it again
   * (at least once). A failed send stays due for the next check.
   */
  private sendNotices(now: Date): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      let notified = 0;
      for (const notice of await this.endpoints.lockNoticesDue(manager, new Date(now.getTime() - FAILING_NOTICE_AFTER_MS), NOTICES_PER_CHECK)) {
        try {
          if ((await this.mailer.send(this.email(notice))) === 'unsent') continue;
        } catch (error) {
          this.logger.warn(`the email about endpoint ${notice.id} was not sent, will retry: ${(error as Error).message}`);
          continue;
        }
        await this.endpoints.noticeSent(manager, notice, now);
        notified += 1;
      }
      return notified;
    });
  }

  private email(notice: EndpointNotice): { to: string; subject: string; text: string } {
    const page = `${this.config.publicBaseUrl}/settings/webhooks/${notice.id}`;
    if (notice.disabledNoticeDue) {
      return {
        to: notice.ownerEmail,
        subject: `Webhook endpoint disabled: ${notice.url}`,
        text: [
          `Messaging Sync disabled your webhook endpoint ${notice.url}:`,
          `${notice.disabledReason ?? 'it kept failing'}.`,
          '',
          'It receives no events while disabled, and its deliveries that were waiting were cancelled.',
          "Once the receiver answers with a 2xx again, press Enable on the endpoint's page (or call update_webhook",
          'with status "active"), then resend what it missed with Recover on the same page (or recover_webhook_deliveries).',
          '',
          page,
        ].join('\n'),
      };
    }
    return {
      to: notice.ownerEmail,
      subject: `Webhook endpoint failing for an hour: ${notice.url}`,
      text: [
        `Deliveries to your webhook endpoint ${notice.url} have been failing since ${notice.failingSince?.toISOString()}`,
        `(${notice.consecutiveFailures} failed attempts in a row). Failed deliveries are retried on their schedule.`,
        '',
        `The endpoint will be disabled if it keeps failing for 24 hours or ${AUTO_DISABLE_CONSECUTIVE_FAILURES} attempts in a row.`,
        "Its page shows each delivery's attempts and the receiver's answers:",
        '',
        page,
      ].join('\n'),
    };
  }
}

import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '../../common/clock';
import { PeriodicTask } from '../../common/periodic-task';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { KEEP_ENDED_MS, WebSessionsRepository } from './web-sessions.repository';

const PRUNE_EVERY_MS = 60 * 60_000;

/**
 * Retention of sign-in links and web sessions: every hour a worker deletes the links that expired,
 * and the sessions that ended (past their absolute end, or revoked), more than 30 days ago. Until
 * then a used link still answers "already used", and an ended session stays in the admin list.
 */
@Injectable()
export class WebSessionsRetention implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WebSessionsRetention.name);
  private readonly task = new PeriodicTask('web sessions retention', this.logger, () => this.prune());

  constructor(
    private readonly repository: WebSessionsRepository,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.processRole === 'api') return;
    this.task.start(PRUNE_EVERY_MS);
  }

  onApplicationShutdown(): void {
    this.task.stop();
  }

  async prune(): Promise<{ links: number; sessions: number }> {
    const deleted = await this.repository.deleteEndedBefore(new Date(this.clock.now().getTime() - KEEP_ENDED_MS));
    if (deleted.links || deleted.sessions)
      this.logger.log(`deleted ${deleted.links} sign-in links and ${deleted.sessions} web sessions that ended 30 days ago`);
    return deleted;
  }
}

import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Clock } from '../../common/clock';
import { BackgroundWork, WORKER_ROLES } from '../../queue/background-work';
import { KEEP_ENDED_MS, WebSessionsRepository } from './web-sessions.repository';

const PRUNE_EVERY_MS = 60 * 60_000;

/**
 * Retention of sign-in links and web sessions: every hour a worker deletes the links that expired,
 * and the sessions that ended (past their absolute end, or revoked), more than 30 days ago. Until
 * then a used link still answers "already used", and an ended session stays in the admin list.
 */
@Injectable()
export class WebSessionsRetention implements OnModuleInit {
  private readonly logger = new Logger(WebSessionsRetention.name);

  constructor(
    private readonly repository: WebSessionsRepository,
    private readonly clock: Clock,
    private readonly work: BackgroundWork,
  ) {}

  onModuleInit(): void {
    this.work.every({ name: 'web sessions retention', roles: WORKER_ROLES, everyMs: PRUNE_EVERY_MS, logger: this.logger, run: () => this.prune() });
  }

  async prune(): Promise<{ links: number; sessions: number }> {
    const deleted = await this.repository.deleteEndedBefore(new Date(this.clock.now().getTime() - KEEP_ENDED_MS));
    if (deleted.links || deleted.sessions)
      this.logger.log(`deleted ${deleted.links} sign-in links and ${deleted.sessions} web sessions that ended 30 days ago`);
    return deleted;
  }
}

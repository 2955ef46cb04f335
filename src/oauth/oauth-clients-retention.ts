import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { BackgroundWork, WORKER_ROLES } from '../queue/background-work';
import { OAuthService } from './oauth.service';

/** The longest wait between two runs: an hour. */
const MAX_INTERVAL_MS = 60 * 60_000;

/**
 * Registrations never used expire (docs/mcp.md, "Connecting Claude, ChatGPT and other OAuth
 * clients"): a worker deletes the clients that registered more than OAUTH_UNUSED_CLIENT_TTL_SECONDS
 * (24 hours by default) ago and never got a grant, so Dynamic Client Registration cannot fill the
 * table. It runs every half of that period, at most an hour apart, at least a second.
 */
@Injectable()
export class OAuthClientsRetention implements OnModuleInit {
  private readonly logger = new Logger(OAuthClientsRetention.name);

  constructor(
    private readonly oauth: OAuthService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly work: BackgroundWork,
  ) {}

  onModuleInit(): void {
    const ttlMs = this.config.oauth.unusedClientTtlSeconds * 1000;
    this.work.every({
      name: 'oauth clients retention',
      roles: WORKER_ROLES,
      everyMs: Math.min(MAX_INTERVAL_MS, Math.max(1000, ttlMs / 2)),
      setting: 'OAUTH_UNUSED_CLIENT_TTL_SECONDS',
      logger: this.logger,
      run: () => this.prune(),
    });
  }

  async prune(): Promise<number> {
    const deleted = await this.oauth.deleteUnusedClients(this.config.oauth.unusedClientTtlSeconds * 1000);
    if (deleted) this.logger.log(`deleted ${deleted} OAuth client registrations never used`);
    return deleted;
  }
}

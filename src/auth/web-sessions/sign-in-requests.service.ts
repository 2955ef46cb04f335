import { createHash } from 'node:crypto';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { normalizeAddress } from '../../identity/account.types';
import { clientKey } from '../../common/client-address';
import { RateLimits } from '../../limits/rate-limits.service';
import { SignInMailer } from './sign-in-mailer';
import { WebSessionsService } from './web-sessions.service';

/**
 * `POST /sign-in`: counts the request against the per-IP and per-address budgets
 * (SIGN_IN_RATE_LIMIT_PER_IP, SIGN_IN_RATE_LIMIT_PER_ADDRESS: RateLimitedError beyond), then looks
 * the address up and sends a link in the background. The answer is the same, and comes as fast,
 * whether or not the address belongs to a user.
 */
@Injectable()
export class SignInRequests implements OnApplicationShutdown {
  private readonly logger = new Logger(SignInRequests.name);
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly rateLimits: RateLimits,
    private readonly sessions: WebSessionsService,
    private readonly mailer: SignInMailer,
  ) {}

  async request(email: string, ip: string | undefined): Promise<void> {
    const address = normalizeAddress(email);
    await this.rateLimits.consume('signInIp', clientKey(ip), 1, 'this network address');
    // The address is counted by its digest: Redis never holds the email address itself.
    await this.rateLimits.consume('signInAddress', createHash('sha256').update(address).digest('hex'), 1, 'this email address');
    const work = this.send(address).catch((error: unknown) =>
      this.logger.error(`a sign-in link could not be sent: ${error instanceof Error ? error.message : String(error)}`),
    );
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
  }

  /** Resolves when every link asked for so far has been sent (or failed); for shutdown and tests. */
  async settled(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.settled();
  }

  private async send(address: string): Promise<void> {
    const userId = await this.sessions.userIdByEmail(address);
    if (userId === null) return;
    const link = await this.sessions.issueLink(userId);
    await this.mailer.send(address, link.url, link.expiresAt);
  }
}

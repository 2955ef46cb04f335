import { Inject, Injectable } from '@nestjs/common';
import { Principal } from '../../identity/principal';
import { NotFoundError } from '../../common/errors';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { OutboundRepository, OutboxMessage } from './outbound.repository';

/** How many messages the development outbox lists. */
export const OUTBOX_SIZE = 50;

/**
 * The development outbox (docs/web.md): what was sent from the caller's lines, newest first, with
 * each message's status and, when it FAILED, why; in development the development carrier and
 * mailer take what no configured carrier or mail server would (channels/sms, channels/email).
 * Development only: elsewhere it does not exist.
 */
@Injectable()
export class DevelopmentOutboxService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly messages: OutboundRepository,
  ) {}

  async list(caller: Principal): Promise<{ messages: OutboxMessage[] }> {
    if (!this.config.isDevelopment) throw new NotFoundError('the development outbox exists only when APP_ENV=development');
    return { messages: await this.messages.recent(caller, OUTBOX_SIZE) };
  }
}

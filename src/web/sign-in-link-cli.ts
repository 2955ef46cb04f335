import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { normalizeAddress } from '../identity/account.types';
import { WebSessionsModule } from '../auth/web-sessions/web-sessions.module';
import { WebSessionsService } from '../auth/web-sessions/web-sessions.service';
import { CommonModule } from '../common/common.module';
import { ConfigModule } from '../config/config.module';
import { DatabaseModule } from '../database/database.module';
import { IdentityModule } from '../identity/identity.module';
import { LimitsModule } from '../limits/limits.module';
import { QueueModule } from '../queue/queue.module';

/**
 * `node dist/src/web/sign-in-link-cli.js <email>`: prints a one-time sign-in link (15 minutes) for
 * the user with this email. For a local run (scripts/dev.sh prints one for the demo owner) and
 * for operators with database access; the admin API does the same over HTTP.
 */

/**
 * What minting a link needs, and nothing else (no HTTP server, no features, no tools): the
 * configuration, the database, and the sessions module with what its providers inject (the
 * clock and mailer of common/, the rate limits of limits/, the lines repository of identity/, the
 * background-work registry of queue/).
 */
@Module({ imports: [ConfigModule, CommonModule, DatabaseModule, QueueModule, LimitsModule, IdentityModule, WebSessionsModule] })
class SignInLinkCliModule {}

async function main(): Promise<void> {
  const email = process.argv[2];
  if (!email) throw new Error('usage: sign-in-link-cli <email>');
  process.env.PROCESS_ROLE = 'api'; // no queue processors in a short-lived run (as the seed)
  const app = await NestFactory.createApplicationContext(SignInLinkCliModule, { logger: ['error'] });
  try {
    const sessions = app.get(WebSessionsService);
    const userId = await sessions.userIdByEmail(normalizeAddress(email));
    if (!userId) throw new Error(`no user has the email ${email}`);
    const link = await sessions.issueLink(userId);
    process.stdout.write(`${link.url}\n`);
  } finally {
    await app.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`sign-in link: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

import 'reflect-metadata';
import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AccountsService } from '../accounts/accounts.service';
import { Org } from '../accounts/org.entity';
import { ApiKeysService } from '../auth/api-keys.service';
import { AppModule } from '../app.module';
import { loadConfig } from '../config/app-config';
import { runMigrations } from '../database/migrate';
import { seedConversations } from './seed-conversations';
import { connectSeedMailbox, seedMailboxOf } from './seed-mailbox';

export const DEMO = {
  org: { name: 'Demo Org', tier: 'PRO' as const },
  owner: { email: 'owner@demo.example', displayName: 'Demo Owner', role: 'OWNER' as const },
  emailLine: 'inbox@demo.example',
  phoneLine: '+15551230001',
};

/**
 * Development seed: on an empty database, a demo org with an OWNER, one email line and one phone
 * line (both the owner's), a few conversations on them (seed-conversations.ts), and one API key
 * printed once. A database that has orgs is left alone.
 * With SEED_MAILBOX_IMAP and SEED_MAILBOX_SMTP set, the email line is then connected to that
 * development mail server unless it has a mailbox already (seed-mailbox.ts), on a new database or
 * an old one alike; a server that cannot be reached is a warning, not a failure.
 */
async function seed(): Promise<void> {
  // A short-lived run starts no queue processors: Bull names a processor's connection without
  // waiting for the answer (Queue#setHandler), and closing before it comes is an unhandled
  // rejection that ended a seed of an already-seeded database with a stack trace.
  process.env.PROCESS_ROLE = 'api';
  const config = loadConfig();
  const mailbox = seedMailboxOf(process.env); // a bad value stops the seed before anything is written
  await runMigrations(config.databaseUrl);
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
  try {
    await seedDemo(app);
    if (mailbox) {
      await connectSeedMailbox(app, DEMO.emailLine, mailbox, {
        info: (line) => process.stdout.write(`${line}\n`),
        warn: (line) => process.stderr.write(`${line}\n`),
      });
    }
  } finally {
    await app.close();
  }
}

async function seedDemo(app: INestApplicationContext): Promise<void> {
  const existing = await app.get(DataSource).getRepository(Org).count();
  if (existing > 0) {
    process.stdout.write(`seed: the database already has ${existing} org(s); nothing seeded\n`);
    return;
  }
  const accounts = app.get(AccountsService);
  const org = await accounts.createOrg(DEMO.org);
  const owner = await accounts.createUser(org.id, DEMO.owner);
  const email = await accounts.createLine(org.id, { type: 'EMAIL_ACCOUNT', address: DEMO.emailLine });
  const phone = await accounts.createLine(org.id, { type: 'PHONE_NUMBER', address: DEMO.phoneLine });
  for (const line of [email, phone]) await accounts.addMember(line.id, owner.id);
  const key = await app.get(ApiKeysService).create(owner.id, { name: 'demo key', channelAccess: { mode: 'ALL' } });
  const caller = await app.get(ApiKeysService).resolve(key.key);
  if (!caller) throw new Error('the demo key does not resolve');
  // SEED_CONVERSATIONS=false: the org without conversations (npm run demo feeds its own and narrates each event).
  const seeded =
    process.env.SEED_CONVERSATIONS === 'false'
      ? null
      : await seedConversations(app, caller, { phone: { id: phone.id, address: DEMO.phoneLine }, email: { address: DEMO.emailLine } });
  process.stdout.write(
    [
      'seed: created the demo org',
      `  org        ${org.id} (${org.tier})`,
      `  owner      ${owner.email} (${owner.id})`,
      `  lines      ${DEMO.emailLine}, ${DEMO.phoneLine}`,
      seeded
        ? `  inbox      ${seeded.threads} conversations, ${seeded.drafts} agent draft awaiting approval (sign in to see them)`
        : '  inbox      empty (SEED_CONVERSATIONS=false)',
      `  API key    ${key.key}`,
      '  (the key is shown only now; keep it)',
      '',
    ].join('\n'),
  );
}

seed().catch((error: unknown) => {
  process.stderr.write(`seed failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AccountsService } from '../accounts/accounts.service';
import { Org } from '../accounts/org.entity';
import { ApiKeysService } from '../auth/api-keys.service';
import { AppModule } from '../app.module';
import { loadConfig } from '../config/app-config';
import { runMigrations } from '../database/migrate';

export const DEMO = {
  org: { name: 'Demo Org', tier: 'PRO' as const },
  owner: { email: 'owner@demo.example', displayName: 'Demo Owner', role: 'OWNER' as const },
  emailLine: 'inbox@demo.example',
  phoneLine: '+15551230001',
};

/**
 * Development seed: on an empty database, a demo org with an OWNER, one email line and one phone
 * line (both the owner's), and one API key printed once. A database that has orgs is left alone.
 */
async function seed(): Promise<void> {
  // A short-lived run starts no queue processors: Bull names a processor's connection without
  // waiting for the answer (Queue#setHandler), and closing before it comes is an unhandled
  // rejection that ended a seed of an already-seeded database with a stack trace.
  process.env.PROCESS_ROLE = 'api';
  const config = loadConfig();
  await runMigrations(config.databaseUrl);
  const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
  try {
    const existing = await app.get(DataSource).getRepository(Org).count();
    if (existing > 0) {
      process.stdout.write(`seed: the database already has ${existing} org(s); nothing seeded\n`);
      return;
    }
    const accounts = app.get(AccountsService);
    const org = await accounts.createOrg(DEMO.org);
    const owner = await accounts.createUser(org.id, DEMO.owner);
    for (const line of [
      await accounts.createLine(org.id, { type: 'EMAIL_ACCOUNT', address: DEMO.emailLine }),
      await accounts.createLine(org.id, { type: 'PHONE_NUMBER', address: DEMO.phoneLine }),
    ]) {
      await accounts.addMember(line.id, owner.id);
    }
    const key = await app.get(ApiKeysService).create(owner.id, { name: 'demo key', channelAccess: { mode: 'ALL' } });
    process.stdout.write(
      [
        'seed: created the demo org',
        `  org        ${org.id} (${org.tier})`,
        `  owner      ${owner.email} (${owner.id})`,
        `  lines      ${DEMO.emailLine}, ${DEMO.phoneLine}`,
        `  API key    ${key.key}`,
        '  (the key is shown only now; keep it)',
        '',
      ].join('\n'),
    );
  } finally {
    await app.close();
  }
}

seed().catch((error: unknown) => {
  process.stderr.write(`seed failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

import { Logger } from '@nestjs/common';
import { SecretBox } from '../../../common/secret-box';
import { AppConfig } from '../../../config/app-config';
import { BackgroundWork } from '../../../queue/background-work';
import { EmailIngestService } from '../email-ingest.service';
import { MailboxHealthService } from '../mailbox-health/mailbox-health.service';
import { MailboxSync } from './mailbox-sync';
import { MailServers } from './mail-servers';
import { MailboxesRepository, SyncRow } from './mailboxes.repository';

/**
 * The sync's lifecycle at shutdown, with the IMAP server and the database standing in (the sync
 * itself runs against a real Dovecot in test/channels/email/mailbox-sync.e2e-spec.ts).
 */
describe('MailboxSync', () => {
  const row = {
    line_id: 'line-1',
    credentials_version: 1,
    imap_host: 'imap.example',
    imap_port: 993,
    imap_tls: true,
    imap_username: 'u',
  } as unknown as SyncRow;
  let warnings: string[];

  beforeEach(() => {
    warnings = [];
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
  });
  afterEach(() => jest.restoreAllMocks());

  function sync(mailboxes: Partial<Record<keyof MailboxesRepository, jest.Mock>>) {
    const repository = { renew: jest.fn(async () => 1), release: jest.fn(async () => undefined), forSync: jest.fn(async () => row), ...mailboxes };
    const servers = { address: jest.fn(async () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))) };
    const config = { mail: { syncsPerWorker: 1, retryMaxSeconds: 0.01, networkGraceSeconds: 60, authFailuresBeforeUnhealthy: 3 } } as unknown as AppConfig;
    const service = new MailboxSync(
      repository as unknown as MailboxesRepository,
      servers as unknown as MailServers,
      { open: () => 'password' } as unknown as SecretBox,
      {} as EmailIngestService,
      { recordSync: jest.fn() } as unknown as MailboxHealthService,
      config,
      { add: jest.fn() } as unknown as BackgroundWork,
    );
    return { service, repository };
  }

  async function until(check: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`waited 10 s for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  it('stopping during a tick that is claiming also ends the session that tick starts, lease released', async () => {
    let claimed!: (lineIds: string[]) => void;
    const { service, repository } = sync({
      claim: jest.fn(() => new Promise<string[]>((resolve) => (claimed = resolve))),
      unreachable: jest.fn(async () => new Date()),
    });
    service.start();
    await until(() => claimed !== undefined, 'the claim');
    let stopped = false;
    const stopping = service.stop().then(() => (stopped = true));
    claimed(['line-1']);
    await stopping;
    expect(stopped).toBe(true);
    expect(service.syncing).toEqual([]);
    expect(repository.release).toHaveBeenCalledWith('line-1', service.owner);
  });

  it('a failure it cannot record (the database away too) is logged and retried, and stop still resolves', async () => {
    const { service } = sync({
      claim: jest.fn(async () => ['line-1']),
      unreachable: jest.fn(async () => Promise.reject(new Error('Driver not Connected'))),
    });
    await service.tick();
    await until(
      () => warnings.filter((w) => w.includes('its failure could not be recorded, will retry: Driver not Connected')).length >= 2,
      'two logged retries',
    );
    expect(service.syncing).toEqual(['line-1']);
    await expect(service.stop()).resolves.toBeUndefined();
    expect(service.syncing).toEqual([]);
  });
});

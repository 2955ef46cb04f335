import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { ImapFlow } from 'imapflow';
import { DomainError, isDatabaseUnavailable } from '../../../common/errors';
import { PeriodicTask } from '../../../common/periodic-task';
import { SecretBox } from '../../../common/secret-box';
import { AppConfig } from '../../../config/app-config';
import { APP_CONFIG } from '../../../config/config.module';
import { BackgroundWork, duration, WORKER_ROLES } from '../../../queue/background-work';
import { EMAIL_INBOUND_MAX_BYTES } from '../email-ingest.controller';
import { EmailIngestService } from '../email-ingest.service';
import { MailboxHealthService } from '../mailbox-health/mailbox-health.service';
import { errorText, mailFailureOf, MailServers } from './mail-servers';
import { MailboxesRepository, SyncRow } from './mailboxes.repository';

/** How long a worker holds a mailbox without renewing: a dead worker's mailboxes move on after this. */
export const SYNC_LEASE_MS = 30_000;
/** How often a worker renews its leases and claims free mailboxes. */
const TICK_MS = 5_000;
/** IDLE is restarted this often: servers may end it after 30 minutes (RFC 2177 asks clients to re-issue it within 29). */
const IDLE_RESTART_MS = 10 * 60_000;
/** Messages fetched per FETCH while catching up... */
const FETCH_BATCH = 25;
/** ...and at most this many bytes of them at once (one larger message is fetched alone). */
const FETCH_BATCH_BYTES = 32 * 1024 * 1024;
/** A message whose import fails this many times for a reason that is not an outage is skipped, or it would stop the mailbox for good. */
const IMPORT_ATTEMPTS = 3;
/** Waits between attempts after a failure, the last repeated (each at most MAIL_SYNC_RETRY_MAX_SECONDS). */
const RETRY_DELAYS_MS = [1_000, 5_000, 15_000, 30_000, 60_000];

/** Importing one message failed (storing it, not reading it from the server). */
class ImportError extends Error {
  constructor(
    readonly uid: number,
    override readonly cause: unknown,
  ) {
    super(`message UID ${uid} could not be imported`);
  }
}

/** Where the INBOX sync stands: its UIDVALIDITY and the highest UID done. */
interface Position {
  uidValidity: string;
  lastUid: number;
}

/**
 * Syncs connected mailboxes (docs/mailboxes.md, "Sync"): every worker process leases mailboxes
 * no live worker holds, up to MAIL_SYNCS_PER_WORKER, and renews the leases every 5 s; a mailbox
 * whose worker died is taken over when its lease runs out (30 s). Each leased mailbox has one
 * session: log in, import the INBOX's new messages through the inbound email path, then wait in
 * IMAP IDLE (or poll every MAIL_SYNC_POLL_SECONDS when the server has no IDLE), and again.
 */
@Injectable()
export class MailboxSync implements OnModuleInit {
  private readonly logger = new Logger(MailboxSync.name);
  /** This process, as lease owner. */
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly sessions = new Map<string, MailboxSession>();
  private readonly task = new PeriodicTask('mailbox sync', this.logger, () => this.tick());

  constructor(
    private readonly mailboxes: MailboxesRepository,
    private readonly servers: MailServers,
    private readonly box: SecretBox,
    private readonly ingest: EmailIngestService,
    private readonly health: MailboxHealthService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly work: BackgroundWork,
  ) {}

  onModuleInit(): void {
    this.work.add({
      name: 'mailbox sync',
      roles: WORKER_ROLES,
      cadence: `leases renewed every ${duration(TICK_MS)}, up to ${this.config.mail.syncsPerWorker} mailboxes`,
      setting: 'MAIL_SYNCS_PER_WORKER',
      enabled: this.config.mail.syncsPerWorker > 0,
      start: () => this.start(),
      stop: () => this.stop(),
    });
  }

  /** Claims free mailboxes now, then renews and claims every TICK_MS. */
  start(): void {
    this.task.start(TICK_MS);
    void this.task.runOnce();
  }

  /**
   * Stops claiming, and ends every session (logged out, its lease released): the sessions a tick
   * under way still starts too, which is why the tick is awaited first.
   */
  async stop(): Promise<void> {
    this.task.stop();
    await this.task.settled();
    await Promise.all([...this.sessions.values()].map((session) => this.end(session)));
  }

  /** The line ids this process syncs now. */
  get syncing(): string[] {
    return [...this.sessions.keys()];
  }

  /** Renews the leases held (ending sessions whose lease was lost or whose credentials changed), then claims free mailboxes. */
  async tick(): Promise<void> {
    for (const session of [...this.sessions.values()]) {
      if (session.finished) {
        this.sessions.delete(session.lineId);
        continue;
      }
      const version = await this.mailboxes.renew(session.lineId, this.owner, SYNC_LEASE_MS);
      if (version === session.credentialsVersion) continue;
      await this.end(session);
    }
    const free = this.config.mail.syncsPerWorker - this.sessions.size;
    if (free <= 0) return;
    for (const lineId of await this.mailboxes.claim(this.owner, SYNC_LEASE_MS, free)) {
      const row = await this.mailboxes.forSync(lineId);
      if (!row) continue;
      const session = new MailboxSession(row, this.owner, this.config.mail, {
        mailboxes: this.mailboxes,
        servers: this.servers,
        box: this.box,
        ingest: this.ingest,
        health: this.health,
        logger: this.logger,
      });
      this.sessions.set(lineId, session);
      session.start();
    }
  }

  private async end(session: MailboxSession): Promise<void> {
    this.sessions.delete(session.lineId);
    await session.stop();
    await this.mailboxes.release(session.lineId, this.owner);
  }
}

interface SessionDeps {
  mailboxes: MailboxesRepository;
  servers: MailServers;
  box: SecretBox;
  ingest: EmailIngestService;
  health: MailboxHealthService;
  logger: Logger;
}

/** One leased mailbox: connect, catch up, wait for mail, again; on failures, the health rules. */
class MailboxSession {
  readonly lineId: string;
  readonly credentialsVersion: number;
  finished = false;
  private stopped = false;
  private client?: ImapFlow;
  private wake?: () => void;
  private done?: Promise<void>;
  /** The server announced mail (EXISTS) since the last catch-up began: catch up again before waiting. */
  private announced = false;
  /** Failed imports by UID (not outages): after IMPORT_ATTEMPTS the message is skipped. */
  private readonly importFailures = new Map<number, number>();

  constructor(
    private readonly row: SyncRow,
    private readonly owner: string,
    private readonly config: AppConfig['mail'],
    private readonly deps: SessionDeps,
  ) {
    this.lineId = row.line_id;
    this.credentialsVersion = row.credentials_version;
  }

  start(): void {
    this.done = this.run().finally(() => {
      this.finished = true;
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    this.client?.close();
    await this.done;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        await this.sync();
        return;
      } catch (error) {
        if (this.stopped) return;
        if ((await this.failedOrRetry(error)) === 'stop' || this.stopped) return;
        await this.sleep(Math.min(RETRY_DELAYS_MS[Math.min(failures, RETRY_DELAYS_MS.length - 1)], this.config.retryMaxSeconds * 1000));
        failures += 1;
      }
    }
  }

  /** Connects and syncs until stopped; throws when the connection fails or ends. */
  private async sync(): Promise<void> {
    const settings = {
      host: this.row.imap_host,
      port: this.row.imap_port,
      tls: this.row.imap_tls,
      username: this.row.imap_username,
      password: this.deps.box.open(this.row.imap_password_sealed),
    };
    // Checked at every connection: what the host resolves to may have changed since it was saved.
    const client = this.deps.servers.imapClient(settings, await this.deps.servers.address('imap', settings.host));
    this.client = client;
    client.on('error', () => undefined); // the failure surfaces as a rejected command or a 'close'
    client.on('exists', () => {
      this.announced = true;
      this.wake?.();
    });
    client.on('close', () => this.wake?.());
    await client.connect();
    await this.deps.mailboxes.reachable(this.lineId, this.owner);
    const lock = await client.getMailboxLock('INBOX');
    try {
      let position = await this.startPosition(client);
      while (!this.stopped) {
        this.announced = false;
        position = await this.importNew(client, position);
        await this.deps.health.recordSync(this.lineId, { ok: true });
        // Mail announced during the catch-up (its EXISTS came while a FETCH ran) is fetched now, not at the next IDLE restart.
        if (this.announced) continue;
        await this.waitForMail(client);
        if (!this.stopped && !client.usable) throw new Error('the IMAP connection closed');
      }
    } finally {
      lock.release();
      await client.logout().catch(() => client.close());
    }
  }

  /**
   * Where to start: the stored position while the INBOX keeps its UIDVALIDITY; otherwise (the
   * first sync, or a server that renumbered its messages) just before the oldest message received
   * within MAIL_SYNC_INITIAL_DAYS. Messages imported before keep their Message-ID, so a renumbered
   * mailbox imports nothing twice.
   */
  private async startPosition(client: ImapFlow): Promise<Position> {
    const mailbox = client.mailbox;
    if (!mailbox) throw new Error('INBOX is not open');
    const uidValidity = String(mailbox.uidValidity);
    if (this.row.uid_validity === uidValidity && this.row.last_uid !== null) return { uidValidity, lastUid: Number(this.row.last_uid) };
    if (this.row.uid_validity !== null) {
      this.deps.logger.warn(`mailbox of line ${this.lineId}: UIDVALIDITY changed (${this.row.uid_validity} → ${uidValidity}); syncing the recent window again`);
    }
    const since = new Date(Date.now() - this.config.initialDays * 86_400_000);
    const recent = mailbox.exists === 0 ? [] : (await client.search({ since }, { uid: true })) || [];
    const lastUid = recent.length > 0 ? Math.min(...recent) - 1 : Number(mailbox.uidNext) - 1;
    await this.deps.mailboxes.savePosition(this.lineId, this.owner, uidValidity, lastUid);
    return { uidValidity, lastUid };
  }

  /**
   * Imports every message after the position, oldest first, saving the position after each. Sizes
   * first: a message larger than the inbound route takes (EMAIL_INBOUND_MAX_BYTES) is skipped
   * with a warning, never fetched; the others are fetched in batches of at most FETCH_BATCH
   * messages and FETCH_BATCH_BYTES.
   */
  private async importNew(client: ImapFlow, position: Position): Promise<Position> {
    if (!client.mailbox || client.mailbox.exists === 0) return position;
    const found = (await client.search({ uid: `${position.lastUid + 1}:*` }, { uid: true })) || [];
    // `n:*` always matches the last message, even when its UID is below n.
    const uids = found.filter((uid) => uid > position.lastUid).sort((a, b) => a - b);
    let lastUid = position.lastUid;
    const done = async (uid: number) => {
      lastUid = uid;
      await this.deps.mailboxes.savePosition(this.lineId, this.owner, position.uidValidity, lastUid);
    };
    for (let i = 0; i < uids.length && !this.stopped; i += FETCH_BATCH) {
      const sizes = new Map<number, number>();
      for await (const message of client.fetch(uids.slice(i, i + FETCH_BATCH).join(','), { uid: true, size: true }, { uid: true })) {
        sizes.set(message.uid, message.size ?? 0);
      }
      let batch: number[] = [];
      let bytes = 0;
      const flush = async () => {
        if (batch.length > 0) await this.importBatch(client, batch, done);
        batch = [];
        bytes = 0;
      };
      for (const uid of uids.slice(i, i + FETCH_BATCH)) {
        if (this.stopped) break;
        const size = sizes.get(uid);
        if (size === undefined) continue; // expunged meanwhile
        if (size > EMAIL_INBOUND_MAX_BYTES) {
          await flush();
          this.deps.logger.warn(
            `mailbox of line ${this.lineId}: message UID ${uid} skipped: ${size} bytes, more than the ${EMAIL_INBOUND_MAX_BYTES} an inbound email may have`,
          );
          await done(uid);
          continue;
        }
        if (batch.length > 0 && bytes + size > FETCH_BATCH_BYTES) await flush();
        batch.push(uid);
        bytes += size;
      }
      await flush();
    }
    return { uidValidity: position.uidValidity, lastUid };
  }

  private async importBatch(client: ImapFlow, uids: number[], done: (uid: number) => Promise<void>): Promise<void> {
    const messages: Array<{ uid: number; source: Buffer }> = [];
    for await (const message of client.fetch(uids.join(','), { uid: true, source: true }, { uid: true })) {
      if (message.source) messages.push({ uid: message.uid, source: message.source });
    }
    for (const message of messages.sort((a, b) => a.uid - b.uid)) {
      if (this.stopped) return;
      await this.importOne(message);
      await done(message.uid);
    }
  }

  private async importOne(message: { uid: number; source: Buffer }): Promise<void> {
    try {
      await this.deps.ingest.receiveFromMailbox(message.source, this.row.address);
      this.importFailures.delete(message.uid);
    } catch (error) {
      // A message the inbound path refuses (a rule, not an outage) is skipped, or it would stop the mailbox for good.
      if (error instanceof DomainError) {
        this.deps.logger.warn(`mailbox of line ${this.lineId}: message UID ${message.uid} skipped: ${error.message}`);
        return;
      }
      // So is one that fails again and again for another reason (not the database being down: that passes, and the message is kept).
      const failures = (this.importFailures.get(message.uid) ?? 0) + 1;
      if (isDatabaseUnavailable(error) || failures < IMPORT_ATTEMPTS) {
        this.importFailures.set(message.uid, failures);
        throw new ImportError(message.uid, error);
      }
      this.importFailures.delete(message.uid);
      this.deps.logger.error(
        `mailbox of line ${this.lineId}: message UID ${message.uid} skipped after ${failures} failed imports: ${errorText(error) || String(error)}`,
      );
    }
  }

  /** Until new mail (IDLE's EXISTS), the connection ends, a stop, or the poll interval / IDLE restart. */
  private async waitForMail(client: ImapFlow): Promise<void> {
    if (this.announced) return;
    const idle = client.capabilities.has('IDLE');
    await new Promise<void>((resolve) => {
      const timer = setTimeout(finish, idle ? IDLE_RESTART_MS : this.config.pollSeconds * 1000);
      function finish() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = finish;
      if (idle) client.idle().catch(() => finish());
    });
    this.wake = undefined;
    if (!idle && client.usable) await client.noop();
  }

  /**
   * `failed`, but a failure to record the failure (the database away too) is logged and retried:
   * the session never ends in a rejection nobody handles, which would end the process.
   */
  private async failedOrRetry(error: unknown): Promise<'retry' | 'stop'> {
    try {
      return await this.failed(error);
    } catch (recordError) {
      if (!this.stopped)
        this.deps.logger.warn(
          `mailbox of line ${this.lineId}: its failure could not be recorded, will retry: ${errorText(recordError) || String(recordError)}`,
        );
      return 'retry';
    }
  }

  /** Applies the health rules to a failed connection or sync; answers whether to retry. */
  private async failed(error: unknown): Promise<'retry' | 'stop'> {
    if (error instanceof ImportError) {
      // The server answered; storing the message failed. Not the mail server's health: retried, then skipped.
      this.deps.logger.warn(`mailbox of line ${this.lineId}: message UID ${error.uid} could not be imported: ${errorText(error.cause) || String(error.cause)}`);
      return 'retry';
    }
    const failure = mailFailureOf('imap', error);
    const text = errorText(error) || String(error);
    if (failure === 'auth') {
      const refused = await this.deps.mailboxes.loginRefused(this.lineId, this.owner);
      if (!refused) return 'stop'; // the lease is gone
      this.deps.logger.warn(`mailbox of line ${this.lineId}: login refused (${refused.failures} in a row): ${text}`);
      if (refused.failures < this.config.authFailuresBeforeUnhealthy) return 'retry';
      await this.deps.health.recordSync(this.lineId, { ok: false, errorKind: 'AUTH', error: `the IMAP server refused the login: ${text}` });
      await this.deps.mailboxes.stopAtAuth(this.lineId, this.owner, refused.credentialsVersion);
      return 'stop';
    }
    if (failure === 'rate_limit') {
      await this.deps.health.recordSync(this.lineId, { ok: false, errorKind: 'RATE_LIMIT', error: `the IMAP server is throttling: ${text}` });
      return 'retry';
    }
    const since = await this.deps.mailboxes.unreachable(this.lineId, this.owner);
    if (!since) return 'stop';
    this.deps.logger.warn(`mailbox of line ${this.lineId}: sync failed (${failure}): ${text}`);
    if (Date.now() - since.getTime() >= this.config.networkGraceSeconds * 1000) {
      await this.deps.health.recordSync(this.lineId, {
        ok: false,
        errorKind: 'NETWORK',
        error: `the IMAP server cannot be reached since ${since.toISOString()}: ${text}`,
      });
    }
    return 'retry';
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(finish, ms);
      function finish() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = finish;
    });
  }
}

import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';
import { freePort } from './delivery';
import { waitUntil } from './wait';

const DOVECOT = process.env.DOVECOT_PATH ?? '/usr/sbin/dovecot';

/** How a test's server differs from a default Dovecot. */
export interface DovecotOptions {
  /** Capabilities left out of what the server announces after a login, e.g. `['IDLE']` for a server the sync must poll. */
  withoutCapabilities?: string[];
  /** Dovecot's mail_max_userip_connections (10): a login past this many sessions of one user from one address is answered `NO [LIMIT]`. */
  maxConnectionsPerUserIp?: number;
}

/**
 * A private Dovecot IMAP server for one test file (Debian's dovecot-imapd, installed by
 * scripts/ensure-debian-package.sh in the global setup): its own configuration, mail and sockets
 * in a temporary directory, plain-text IMAP on a free loopback port, users from a passwd file that
 * Dovecot reads on every login (so a password changes at once). Never the machine's own Dovecot.
 */
export class DovecotServer {
  private process?: ChildProcess;
  private stderr = '';
  /** imap_capability: the announced capabilities, when not Dovecot's own. */
  private capabilities?: string;

  private constructor(
    readonly dir: string,
    readonly imapPort: number,
    private readonly users: Map<string, string>,
    private readonly options: DovecotOptions,
  ) {}

  /** Starts a server with these users (address → password). */
  static async start(users: Record<string, string>, options: DovecotOptions = {}): Promise<DovecotServer> {
    if (!existsSync(DOVECOT)) throw new Error(`${DOVECOT} is missing: run scripts/ensure-debian-package.sh dovecot "dovecot --version" dovecot-imapd`);
    const dir = mkdtempSync(join(tmpdir(), 'mss-dovecot-'));
    chmodSync(dir, 0o755); // Dovecot's auth and mail processes run as its own users: they read the passwd file and mail under it
    const server = new DovecotServer(dir, await freePort(), new Map(Object.entries(users)), options);
    server.writeConfig();
    await server.startProcess();
    if (options.withoutCapabilities?.length) {
      // Dovecot can only add to its own list (`imap_capability = +X`): the list is read from the
      // server after a login, and the server restarted announcing it without those.
      const client = await server.client(Object.keys(users)[0]);
      const own = [...client.capabilities.keys()];
      await client.logout();
      const left = new Set(options.withoutCapabilities.map((c) => c.toUpperCase()));
      server.capabilities = own.filter((c) => !left.has(c.toUpperCase())).join(' ');
      server.writeConfig();
      await server.restart();
    }
    return server;
  }

  get configFile(): string {
    return join(this.dir, 'dovecot.conf');
  }

  /** Sets (or adds) a user's password; the next login sees it. */
  setPassword(user: string, password: string): void {
    this.users.set(user, password);
    this.writePasswd();
  }

  /** A client logged in as `user`, for the test to put mail in place as another mail client would. */
  async client(user: string): Promise<ImapFlow> {
    const client = new ImapFlow({ host: '127.0.0.1', port: this.imapPort, secure: false, auth: { user, pass: this.users.get(user)! }, logger: false });
    await client.connect();
    return client;
  }

  /** Delivers a raw message into the user's mailbox (INBOX by default), received at `receivedAt` (now); answers its UID. */
  async deliver(user: string, raw: string | Buffer, options: { mailbox?: string; receivedAt?: Date } = {}): Promise<number> {
    const mailbox = options.mailbox ?? 'INBOX';
    const client = await this.client(user);
    try {
      const appended = await client.append(mailbox, raw, [], options.receivedAt);
      if (!appended || typeof appended.uid !== 'number') throw new Error(`APPEND to ${mailbox} of ${user} answered no UID`);
      return appended.uid;
    } finally {
      await client.logout();
    }
  }

  /** The raw messages of a user's mailbox, by UID; none while the mailbox does not exist (a client may create it later, as the Sent folder). */
  async messages(user: string, mailbox: string): Promise<Array<{ uid: number; source: string }>> {
    const client = await this.client(user);
    try {
      if (!(await client.list()).some((folder) => folder.path === mailbox)) return [];
      const lock = await client.getMailboxLock(mailbox);
      try {
        const found: Array<{ uid: number; source: string }> = [];
        if ((client.mailbox && client.mailbox.exists) === 0) return found;
        for await (const message of client.fetch('1:*', { uid: true, source: true }))
          found.push({ uid: message.uid, source: message.source!.toString('utf8') });
        return found;
      } finally {
        lock.release();
      }
    } finally {
      await client.logout();
    }
  }

  /**
   * Deletes the user's mail store while the server is stopped, so the mailbox comes back empty
   * under a new UIDVALIDITY (what a restored or rebuilt server does to its clients).
   */
  async resetMailbox(user: string): Promise<void> {
    await this.stop();
    rmSync(join(this.dir, 'mail', user), { recursive: true, force: true });
    await this.startProcess();
  }

  /** Stops the server (its port closes); `restart` brings it back on the same port. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
    await waitUntil(async () => !(await portOpen(this.imapPort)), `127.0.0.1:${this.imapPort} to close`, { timeoutMs: 10_000 });
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.startProcess();
  }

  /** Stops the server and removes its directory. */
  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Dovecot in the foreground (-F) as this process's child: it cannot outlive the tests as a daemon. */
  private async startProcess(): Promise<void> {
    this.stderr = '';
    const child = spawn(DOVECOT, ['-F', '-c', this.configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
    this.process = child;
    await waitUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`dovecot exited with ${child.exitCode}: ${this.stderr}${this.log()}`);
        return portOpen(this.imapPort);
      },
      `dovecot to listen on 127.0.0.1:${this.imapPort}`,
      { timeoutMs: 10_000 },
    );
  }

  /** The lines of the server's log that contain `text` (logins, refusals, disconnections). */
  logLines(text: string): string[] {
    const file = join(this.dir, 'dovecot.log');
    return existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .filter((line) => line.includes(text))
      : [];
  }

  private log(): string {
    const file = join(this.dir, 'dovecot.log');
    return existsSync(file) ? `\n${readFileSync(file, 'utf8').split('\n').slice(-20).join('\n')}` : '';
  }

  private writePasswd(): void {
    const lines = [...this.users].map(([user, password]) => `${user}:{PLAIN}${password}`);
    writeFileSync(join(this.dir, 'passwd'), `${lines.join('\n')}\n`);
  }

  private writeConfig(): void {
    const root = process.getuid?.() === 0;
    // As root, mail belongs to Debian's dovecot user; otherwise everything runs as the current user.
    const mailUser = root ? 'dovecot' : userInfo().username;
    mkdirSync(join(this.dir, 'run'), { recursive: true });
    mkdirSync(join(this.dir, 'mail'), { recursive: true });
    if (root) chownSync(join(this.dir, 'mail'), uidOf('dovecot'), gidOf('dovecot'));
    this.writePasswd();
    writeFileSync(
      this.configFile,
      [
        `base_dir = ${this.dir}/run`,
        `state_dir = ${this.dir}/run/state`,
        `instance_name = mss-test-${this.imapPort}`,
        'protocols = imap',
        'listen = 127.0.0.1',
        'ssl = no',
        'disable_plaintext_auth = no',
        'auth_mechanisms = plain login',
        // A wrong password is answered at once (Dovecot waits 2 s by default to slow guessing).
        'auth_failure_delay = 0',
        `log_path = ${this.dir}/dovecot.log`,
        `mail_location = maildir:${this.dir}/mail/%u`,
        `default_internal_user = ${mailUser}`,
        `default_login_user = ${root ? 'dovenull' : mailUser}`,
        'first_valid_uid = 1',
        `passdb {\n  driver = passwd-file\n  args = scheme=PLAIN ${this.dir}/passwd\n}`,
        `userdb {\n  driver = static\n  args = uid=${mailUser} gid=${root ? 'dovecot' : userInfo().gid} home=${this.dir}/mail/%u\n}`,
        `service imap-login {\n  inet_listener imap {\n    port = ${this.imapPort}\n  }\n  inet_listener imaps {\n    port = 0\n  }\n}`,
        ...(this.capabilities ? [`imap_capability = ${this.capabilities}`] : []),
        ...(this.options.maxConnectionsPerUserIp ? [`mail_max_userip_connections = ${this.options.maxConnectionsPerUserIp}`] : []),
        '',
      ].join('\n'),
    );
  }
}

function idOf(flag: '-u' | '-g', name: string): number {
  const result = spawnSync('id', [flag, name], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`no user ${name}: ${result.stderr}`);
  return Number(result.stdout.trim());
}
const uidOf = (name: string) => idOf('-u', name);
const gidOf = (name: string) => idOf('-g', name);

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

import { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Line } from '../accounts/line.entity';
import { DomainError, NotFoundError } from '../common/errors';
import { MAIL_TLS_MODES, MailTls } from '../channels/email/mailboxes/mailbox.entity';
import { MailboxesService } from '../channels/email/mailboxes/mailboxes.service';

/**
 * A development mail server for the seed's email line, from SEED_MAILBOX_IMAP and
 * SEED_MAILBOX_SMTP (`host:port` each), SEED_MAILBOX_PASSWORD and SEED_MAILBOX_TLS (`none` unless
 * set); the username on both servers is the line's address (docs/mailboxes.md, "Development mail server").
 */
export interface SeedMailbox {
  imap: { host: string; port: number };
  smtp: { host: string; port: number };
  tls: MailTls;
  password: string;
}

/** The seed's mail server, or null when neither SEED_MAILBOX_IMAP nor SEED_MAILBOX_SMTP is set. Throws naming each bad variable. */
export function seedMailboxOf(env: NodeJS.ProcessEnv): SeedMailbox | null {
  const value = (name: string) => env[name]?.trim() || undefined;
  const [imap, smtp, password, tls] = ['SEED_MAILBOX_IMAP', 'SEED_MAILBOX_SMTP', 'SEED_MAILBOX_PASSWORD', 'SEED_MAILBOX_TLS'].map(value);
  if (!imap && !smtp) return null;
  const problems: string[] = [];
  const server = (name: string, text: string | undefined) => {
    const match = text ? /^(.+):(\d{1,5})$/.exec(text) : null;
    const port = match ? Number(match[2]) : 0;
    if (!match || port < 1 || port > 65535)
      problems.push(`${name}: expected host:port (e.g. 127.0.0.1:3143), got ${text === undefined ? 'nothing' : `"${text}"`}`);
    return { host: match?.[1].replace(/^\[(.*)\]$/, '$1') ?? '', port };
  };
  const mailbox = {
    imap: server('SEED_MAILBOX_IMAP', imap),
    smtp: server('SEED_MAILBOX_SMTP', smtp),
    tls: (tls ?? 'none') as MailTls,
    password: password ?? '',
  };
  if (!password)
    problems.push('SEED_MAILBOX_PASSWORD: the password of the email line on the mail server is required with SEED_MAILBOX_IMAP and SEED_MAILBOX_SMTP');
  if (!(MAIL_TLS_MODES as readonly string[]).includes(mailbox.tls))
    problems.push(`SEED_MAILBOX_TLS: expected one of ${MAIL_TLS_MODES.join(', ')}, got "${tls}"`);
  if (problems.length) throw new Error(`invalid seed mailbox settings:\n  - ${problems.join('\n  - ')}`);
  return mailbox;
}

/**
 * Connects the email line `address` to the seed's mail server through MailboxesService, the path
 * of `PUT /admin/lines/:lineId/mailbox`: the address rule, the login check of both servers, the
 * password sealed. A line that has a mailbox already keeps it, so running the seed again changes
 * nothing. A server that cannot be reached or refuses is a one-line warning and the seed goes on:
 * the mailbox is a convenience, and `npm run dev` must work on a machine without a mail server.
 */
export async function connectSeedMailbox(
  app: INestApplicationContext,
  address: string,
  mailbox: SeedMailbox,
  print: { info: (line: string) => void; warn: (line: string) => void },
): Promise<void> {
  const line = await app.get(DataSource).getRepository(Line).findOneBy({ address, type: 'EMAIL_ACCOUNT' });
  if (!line) {
    print.warn(`seed: warning: there is no email line ${address}; SEED_MAILBOX_* left unused`);
    return;
  }
  const mailboxes = app.get(MailboxesService);
  const existing = await mailboxes.get(line.id).catch((error: unknown) => {
    if (error instanceof NotFoundError) return null;
    throw error;
  });
  if (existing) {
    print.info(`seed: ${address} already has a mailbox (IMAP ${existing.imap.host}:${existing.imap.port}); left as it is`);
    return;
  }
  const server = (s: SeedMailbox['imap']) => ({ ...s, tls: mailbox.tls, username: address, password: mailbox.password });
  const where = `IMAP ${mailbox.imap.host}:${mailbox.imap.port}, SMTP ${mailbox.smtp.host}:${mailbox.smtp.port}, tls ${mailbox.tls}`;
  try {
    await mailboxes.connect(line.id, { imap: server(mailbox.imap), smtp: server(mailbox.smtp) });
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    print.warn(
      `seed: warning: ${address} was not connected to its mailbox (${where}): ${error.message}; the seed goes on without it (run it again when the server is up)`,
    );
    return;
  }
  print.info(`seed: connected ${address} to its mailbox (${where}); a worker syncs its INBOX`);
}

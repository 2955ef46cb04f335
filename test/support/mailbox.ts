import { randomUUID } from 'node:crypto';
import { AddressInfo } from 'node:net';
import { SMTPServer, SMTPServerOptions } from 'smtp-server';
import { AdminClient } from './app';

/** A raw email to `to` from a partner, with its own Message-ID; its body is "Body of <subject>" (see `subjectOf`). */
export function email(to: string, subject: string, messageId = `<${randomUUID()}@partner.example>`): string {
  return [
    'From: Partner <partner@partner.example>',
    `To: ${to}`,
    `Subject: ${subject}`,
    `Message-ID: ${messageId}`,
    `Date: ${new Date().toUTCString()}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    `Body of ${subject}`,
    '',
  ].join('\r\n');
}

/** The subject a message made by `email` was sent with, from its stored body. */
export const subjectOf = (body: string) => body.replace(/^Body of /, '').trim();

/** An SMTP server on 127.0.0.1, plain text, that lets any login in (a mailbox's SMTP side); `onData` keeps what it is handed. */
export async function startSmtpServer(onData?: SMTPServerOptions['onData']): Promise<{ port: number; close: () => Promise<void> }> {
  const server = new SMTPServer({
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth: (auth, _session, callback) => callback(null, { user: auth.username }),
    onData: onData ?? ((stream, _session, callback) => stream.resume().on('end', () => callback())),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** PUT /admin/lines/:lineId/mailbox: IMAP and SMTP on 127.0.0.1 in plain text (development), one username; throws unless 200. */
export async function connectMailbox(
  admin: AdminClient,
  lineId: string,
  servers: { imapPort: number; smtpPort: number; username: string; password: string },
): Promise<void> {
  const res = await admin.put(`/admin/lines/${lineId}/mailbox`, {
    imap: { host: '127.0.0.1', port: servers.imapPort, tls: 'none', username: servers.username, password: servers.password },
    smtp: { host: '127.0.0.1', port: servers.smtpPort, tls: 'none', username: servers.username, password: 'smtp' },
  });
  if (res.status !== 200) throw new Error(`PUT mailbox answered ${res.status}: ${JSON.stringify(res.body)}`);
}

import { AddressInfo, createServer, Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** A mail server a test points a mailbox at: its loopback port, and close(). */
export interface TestMailServer {
  port: number;
  close(): Promise<void>;
}

/**
 * A mailbox's SMTP server for a test: plain text (no STARTTLS) on a free loopback port, accepting
 * only these logins (address → password), as the connect check meets a real one.
 */
export async function startLoginSmtp(users: Record<string, string>): Promise<TestMailServer> {
  const smtp = new SMTPServer({
    authOptional: false,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth: (auth, _session, callback) =>
      users[auth.username ?? ''] !== undefined && users[auth.username ?? ''] === auth.password
        ? callback(null, { user: auth.username })
        : callback(new Error('Invalid username or password')),
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  return {
    port: (smtp.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}

/** A server that accepts connections and never says a word: a login check against it waits for MAIL_CONNECT_TIMEOUT_MS. */
export async function startSilentServer(): Promise<TestMailServer> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A mail server that accepts every email (no login) and keeps each one, raw. */
export interface CapturingMailServer extends TestMailServer {
  mails: string[];
}

export async function startCapturingSmtp(): Promise<CapturingMailServer> {
  const mails: string[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, done) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push(Buffer.concat(chunks).toString('utf8'));
        done();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  return {
    mails,
    port: (smtp.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}

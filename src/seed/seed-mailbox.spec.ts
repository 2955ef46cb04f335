import { seedMailboxOf } from './seed-mailbox';

describe('seedMailboxOf', () => {
  it('is null without SEED_MAILBOX_IMAP and SEED_MAILBOX_SMTP (empty counts as unset)', () => {
    expect(seedMailboxOf({})).toBeNull();
    expect(seedMailboxOf({ SEED_MAILBOX_IMAP: '', SEED_MAILBOX_SMTP: ' ', SEED_MAILBOX_PASSWORD: 'secret' })).toBeNull();
  });

  it('reads host:port for each server, the password, and tls (none unless set)', () => {
    expect(seedMailboxOf({ SEED_MAILBOX_IMAP: 'greenmail:3143', SEED_MAILBOX_SMTP: '127.0.0.1:3025', SEED_MAILBOX_PASSWORD: 'secret' })).toEqual({
      imap: { host: 'greenmail', port: 3143 },
      smtp: { host: '127.0.0.1', port: 3025 },
      tls: 'none',
      password: 'secret',
    });
    expect(
      seedMailboxOf({ SEED_MAILBOX_IMAP: '[::1]:993', SEED_MAILBOX_SMTP: 'mail.test:465', SEED_MAILBOX_PASSWORD: 'secret', SEED_MAILBOX_TLS: 'implicit' }),
    ).toMatchObject({ imap: { host: '::1', port: 993 }, tls: 'implicit' });
  });

  it('names every bad or missing variable', () => {
    expect(() => seedMailboxOf({ SEED_MAILBOX_IMAP: 'greenmail', SEED_MAILBOX_TLS: 'ssl' })).toThrow(
      [
        'invalid seed mailbox settings:',
        '  - SEED_MAILBOX_IMAP: expected host:port (e.g. 127.0.0.1:3143), got "greenmail"',
        '  - SEED_MAILBOX_SMTP: expected host:port (e.g. 127.0.0.1:3143), got nothing',
        '  - SEED_MAILBOX_PASSWORD: the password of the email line on the mail server is required with SEED_MAILBOX_IMAP and SEED_MAILBOX_SMTP',
        '  - SEED_MAILBOX_TLS: expected one of implicit, starttls, none, got "ssl"',
      ].join('\n'),
    );
    expect(() => seedMailboxOf({ SEED_MAILBOX_IMAP: 'greenmail:70000', SEED_MAILBOX_SMTP: 'greenmail:3025', SEED_MAILBOX_PASSWORD: 'x' })).toThrow(
      'SEED_MAILBOX_IMAP: expected host:port (e.g. 127.0.0.1:3143), got "greenmail:70000"',
    );
  });
});

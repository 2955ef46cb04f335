import { errorText, mailFailureOf } from './mail-servers';

/** Errors as imapflow (IMAP) and nodemailer (SMTP) report real servers' answers. */
const dovecotLimit = {
  message: 'Command failed',
  response: '2 NO [LIMIT] Maximum number of connections from user+IP exceeded (mail_max_userip_connections=2)',
  responseText: 'Maximum number of connections from user+IP exceeded (mail_max_userip_connections=2)',
  serverResponseCode: 'LIMIT',
  executedCommand: '2 AUTHENTICATE PLAIN',
  authenticationFailed: true,
};
const dovecotRefused = {
  message: 'Command failed',
  response: '2 NO [AUTHENTICATIONFAILED] Authentication failed.',
  responseText: 'Authentication failed.',
  serverResponseCode: 'AUTHENTICATIONFAILED',
  authenticationFailed: true,
};

describe('mailFailureOf', () => {
  it("is rate_limit for Dovecot's [LIMIT] answer to a login, which imapflow reports as a failed authentication", () => {
    expect(mailFailureOf('imap', dovecotLimit)).toBe('rate_limit');
  });

  it('is rate_limit for a temporary failure ([UNAVAILABLE]) answered to a login: the credentials are not wrong', () => {
    const unavailable = {
      ...dovecotRefused,
      response: '2 NO [UNAVAILABLE] Temporary authentication failure.',
      responseText: 'Temporary authentication failure.',
    };
    expect(mailFailureOf('imap', unavailable)).toBe('rate_limit');
  });

  it('is auth for a refused password (IMAP and SMTP)', () => {
    expect(mailFailureOf('imap', dovecotRefused)).toBe('auth');
    const smtp = {
      code: 'EAUTH',
      response: '535 5.7.8 Error: authentication failed',
      responseCode: 535,
      message: 'Invalid login: 535 5.7.8 Error: authentication failed',
    };
    expect(mailFailureOf('smtp', smtp)).toBe('auth');
  });

  it('is rate_limit for an SMTP server turning connections away', () => {
    expect(mailFailureOf('smtp', { code: 'EPROTOCOL', response: '421 4.7.0 Too many connections, try again later', responseCode: 421 })).toBe('rate_limit');
  });

  it('is tls, timeout or connection for the transport failing', () => {
    expect(mailFailureOf('imap', { code: 'ERR_TLS_CERT_ALTNAME_INVALID', message: "Hostname/IP does not match certificate's altnames" })).toBe('tls');
    expect(mailFailureOf('imap', { code: 'CONNECT_TIMEOUT', message: 'Failed to establish connection in required time' })).toBe('timeout');
    expect(mailFailureOf('imap', { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:143' })).toBe('connection');
  });
});

describe('errorText', () => {
  it("is the server's own words on one line", () => {
    expect(errorText(dovecotLimit)).toBe('Maximum number of connections from user+IP exceeded (mail_max_userip_connections=2)');
    expect(errorText({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED\n 127.0.0.1:143' })).toBe('ECONNREFUSED connect ECONNREFUSED 127.0.0.1:143');
  });
});

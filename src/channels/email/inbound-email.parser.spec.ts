import { createHash } from 'node:crypto';
import { ValidationError } from '../../common/errors';
import { htmlToPlainText } from '../../common/html-text';
import { parseAuthenticationResults, parseInboundEmail } from './inbound-email.parser';

describe('parseAuthenticationResults', () => {
  it('reads spf, dkim and dmarc, ignoring comments and properties', () => {
    expect(
      parseAuthenticationResults(
        'mx.google.com; dkim=pass header.i=@a.example header.s=s1 header.b=abc; spf=softfail (google.com: domain of x@a.example ' +
          'does not designate 1.2.3.4; dkim=fail) smtp.mailfrom=x@a.example; dmarc=fail (p=NONE sp=NONE dis=NONE) header.from=a.example',
      ),
    ).toEqual({ spf: 'softfail', dkim: 'pass', dmarc: 'fail' });
  });

  it('lets a passing DKIM signature win over a failing one, and leaves absent methods null', () => {
    expect(parseAuthenticationResults('mx.example; dkim=fail header.d=b.example; dkim=pass header.d=a.example')).toEqual({
      spf: null,
      dkim: 'pass',
      dmarc: null,
    });
    expect(parseAuthenticationResults('mx.example; none')).toEqual({ spf: null, dkim: null, dmarc: null });
    expect(parseAuthenticationResults(null)).toEqual({ spf: null, dkim: null, dmarc: null });
  });

  it('does not read the authserv-id as a result', () => {
    expect(parseAuthenticationResults('spf=pass.example; dmarc=NONE')).toEqual({ spf: null, dkim: null, dmarc: 'none' });
  });
});

describe('parseInboundEmail', () => {
  it('reads an HTML-only body as plain text the way HTML attachments are read (common/html-text.ts)', async () => {
    const html =
      '<h1>Offer</h1><p>See&nbsp;<a href="https://x.example/o">the offer</a><img src="https://t.example/pixel.gif" alt="pixel"></p>' +
      '<!-- note --><script>alert(1)</script><p><a href="https://x.example">https://x.example</a></p>';
    const raw = ['From: a@x.example', 'To: b@x.example', 'Subject: s', 'Content-Type: text/html; charset=utf-8', '', html, ''].join('\r\n');
    const email = await parseInboundEmail(Buffer.from(raw));
    expect(email.text).toBe('Offer\n\nSee the offer [https://x.example/o]\n\nhttps://x.example');
    expect(email.text).toBe(htmlToPlainText(email.html!));
  });

  it('keeps the HTML of a body nested too deep to convert, with no text', async () => {
    const raw = ['From: a@x.example', 'To: b@x.example', 'Subject: s', 'Content-Type: text/html', '', '<b>'.repeat(300), ''].join('\r\n');
    const email = await parseInboundEmail(Buffer.from(raw));
    expect(email.text).toBe('');
    expect(email.html).toContain('<b><b>');
  });

  it('lists To, Cc and Delivered-To recipients in that order, lower-cased and once each', async () => {
    const email = await parseInboundEmail(
      Buffer.from('Delivered-To: c@x.example\r\nFrom: "Ann" <A@X.example>\r\nTo: B@x.example, g: c@x.example;\r\nCc: b@x.example\r\n\r\nhi\r\n'),
    );
    expect(email.recipients).toEqual(['b@x.example', 'c@x.example']);
    expect(email.from).toEqual({ address: 'a@x.example', displayName: 'Ann' });
  });

  it('uses the SHA-256 of the raw message when there is no Message-ID', async () => {
    const raw = Buffer.from('From: a@x.example\r\nTo: b@x.example\r\n\r\nhi\r\n');
    expect((await parseInboundEmail(raw)).providerMessageId).toBe(`sha256:${createHash('sha256').update(raw).digest('hex')}`);
  });

  it('treats a Message-ID (or a reference) longer than 998 characters as absent: it could not be indexed', async () => {
    const long = `<${'x'.repeat(1200)}@x.example>`;
    const raw = Buffer.from(
      `From: a@x.example\r\nTo: b@x.example\r\nMessage-ID: ${long}\r\nIn-Reply-To: ${long}\r\nReferences: <ok@x.example> ${long}\r\n\r\nhi\r\n`,
    );
    const email = await parseInboundEmail(raw);
    expect(email).toMatchObject({ messageId: null, inReplyTo: null, references: ['<ok@x.example>'] });
    expect(email.providerMessageId).toBe(`sha256:${createHash('sha256').update(raw).digest('hex')}`);
  });

  it('takes a message with no recipient in its headers (Bcc) when the caller knows the line', async () => {
    const raw = Buffer.from('From: a@x.example\r\nTo: undisclosed-recipients:;\r\n\r\nhi\r\n');
    await expect(parseInboundEmail(raw)).rejects.toThrow(/no recipient/);
    expect((await parseInboundEmail(raw, { requireRecipient: false })).recipients).toEqual([]);
  });

  it('refuses what is not a message, naming the problem', async () => {
    await expect(parseInboundEmail(Buffer.alloc(0))).rejects.toThrow(/empty/);
    await expect(parseInboundEmail(Buffer.from('To: b@x.example\r\n\r\nhi'))).rejects.toThrow(ValidationError);
    await expect(parseInboundEmail(Buffer.from('From: a@x.example\r\n\r\nhi'))).rejects.toThrow(/no recipient/);
  });

  it('refuses a From address longer than 254 characters, and cuts a sender name to 200', async () => {
    const from = (local: string, name = 'Ann') => Buffer.from(`From: "${name}" <${local}@x.example>\r\nTo: b@x.example\r\n\r\nhi\r\n`);
    const longest = 'a'.repeat(254 - '@x.example'.length);
    expect((await parseInboundEmail(from(longest))).from.address).toBe(`${longest}@x.example`);
    await expect(parseInboundEmail(from(`${longest}a`))).rejects.toThrow(
      new ValidationError('the From address is 255 characters long, more than the 254 an address may have (RFC 5321)', 'from'),
    );
    expect((await parseInboundEmail(from('a', `${'é'.repeat(199)}🙂🙂`))).from.displayName).toBe(`${'é'.repeat(199)}🙂`);
  });

  it('skips empty attachment parts and names unnamed ones', async () => {
    const raw = [
      'From: a@x.example',
      'To: b@x.example',
      'Content-Type: multipart/mixed; boundary=zz',
      '',
      '--zz',
      'Content-Type: text/plain',
      '',
      'body',
      '--zz',
      'Content-Type: application/octet-stream',
      'Content-Disposition: attachment; filename="empty.bin"',
      'Content-Transfer-Encoding: base64',
      '',
      '',
      '--zz',
      'Content-Type: text/csv',
      'Content-Disposition: attachment',
      '',
      'a,b',
      '1,2',
      '--zz--',
      '',
    ].join('\r\n');
    const email = await parseInboundEmail(Buffer.from(raw));
    expect(email.attachments.map((a) => [a.filename, a.contentType, a.content.toString()])).toEqual([['attachment-1', 'text/csv', 'a,b\r\n1,2']]);
  });
});

describe('parseInboundEmail: text that PostgreSQL would refuse', () => {
  const NO_NUL_OR_LONE_SURROGATE = (value: unknown): void => {
    const strings: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string') strings.push(v);
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object' && !Buffer.isBuffer(v)) Object.values(v).forEach(walk);
    };
    walk(value);
    for (const s of strings) {
      expect(s).not.toContain('\u0000');
      expect(s.isWellFormed()).toBe(true);
    }
  };

  it('removes U+0000 from raw bytes, quoted-printable =00, encoded-words and RFC 2231 filenames', async () => {
    const raw = Buffer.concat([
      Buffer.from(
        [
          'From: =?UTF-8?Q?Ann=00_Lee?= <ann@x.example>',
          'To: b@x.example',
          'Subject: =?UTF-8?B?' + Buffer.from('Quarterly\u0000 report').toString('base64') + '?=',
          'Message-ID: <nul-1@x.example>',
          'List-Unsubscribe: <mailto:u@x.example>',
          'Content-Type: multipart/mixed; boundary=zz',
          '',
          '--zz',
          'Content-Type: text/plain; charset=utf-8',
          'Content-Transfer-Encoding: quoted-printable',
          '',
          'one=00two',
          '--zz',
          'Content-Type: text/html; charset=utf-8',
          '',
          '<p>raw ',
        ].join('\r\n'),
      ),
      Buffer.from([0]),
      Buffer.from(
        [
          ' nul</p>',
          '--zz',
          'Content-Type: application/octet-stream',
          "Content-Disposition: attachment; filename*=UTF-8''in%00voice.pdf",
          '',
          'data',
          '--zz',
          'Content-Type: application/octet-stream; name="=?UTF-8?Q?sc=00an.png?="',
          'Content-Disposition: attachment',
          '',
          'data',
          '--zz--',
          '',
        ].join('\r\n'),
      ),
    ]);
    const email = await parseInboundEmail(raw);
    expect(email.from).toEqual({ address: 'ann@x.example', displayName: 'Ann Lee' });
    expect(email.subject).toBe('Quarterly report');
    expect(email.text).toContain('onetwo');
    expect(email.html).toContain('<p>raw  nul</p>');
    expect(email.attachments.map((a) => a.filename)).toEqual(['invoice.pdf', 'scan.png']);
    NO_NUL_OR_LONE_SURROGATE(email);
  });

  it('replaces lone surrogates (UTF-16 encoded-words with half a pair) by U+FFFD', async () => {
    const halfPair = (text: string) => `=?UTF-16LE?B?${Buffer.concat([Buffer.from(text, 'utf16le'), Buffer.from([0x00, 0xd8])]).toString('base64')}?=`;
    const raw = [
      `From: ${halfPair('Ann')} <ann@x.example>`,
      'To: b@x.example',
      `Subject: ${halfPair('Hello')}`,
      'Content-Type: multipart/mixed; boundary=zz',
      '',
      '--zz',
      'Content-Type: text/plain',
      '',
      'body',
      '--zz',
      'Content-Type: application/octet-stream',
      `Content-Disposition: attachment; filename="${halfPair('scan')}"`,
      '',
      'x',
      '--zz--',
      '',
    ].join('\r\n');
    const email = await parseInboundEmail(Buffer.from(raw));
    expect(email.subject).toBe('Hello\ufffd');
    expect(email.from.displayName).toBe('Ann\ufffd');
    expect(email.attachments.map((a) => a.filename)).toEqual(['scan\ufffd']);
    NO_NUL_OR_LONE_SURROGATE(email);
  });

  it('names an attachment whose filename was nothing but U+0000', async () => {
    const raw = [
      'From: a@x.example',
      'To: b@x.example',
      'Content-Type: multipart/mixed; boundary=zz',
      '',
      '--zz',
      'Content-Type: text/plain',
      '',
      'body',
      '--zz',
      'Content-Type: application/octet-stream',
      'Content-Disposition: attachment; filename="=?UTF-8?B?AA==?="',
      '',
      'x',
      '--zz--',
      '',
    ].join('\r\n');
    const email = await parseInboundEmail(Buffer.from(raw));
    expect(email.attachments.map((a) => a.filename)).toEqual(['attachment-1']);
  });
});

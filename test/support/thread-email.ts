import { randomUUID } from 'node:crypto';

/**
 * The n-th email of one thread from one partner, as a mail server hands it to ingest: the first
 * (n = 0) carries `root` as its Message-ID and starts the thread, each later one replies to it;
 * with `attachment`, a multipart/mixed email with that text file attached.
 */
export function threadEmail(e: {
  from: string;
  to: string;
  root: string;
  n: number;
  subject: string;
  text: string;
  attachment?: { filename: string; text: string };
}): string {
  const head = [
    `From: "Pat Partner" <${e.from}>`,
    `To: <${e.to}>`,
    `Subject: ${e.n === 0 ? e.subject : `Re: ${e.subject}, part ${e.n}`}`,
    `Date: ${new Date(Date.UTC(2026, 10, 1, 9, e.n)).toUTCString()}`,
    `Message-ID: ${e.n === 0 ? e.root : `<m${e.n}-${randomUUID()}@partner.example>`}`,
    ...(e.n === 0 ? [] : [`In-Reply-To: ${e.root}`, `References: ${e.root}`]),
    'MIME-Version: 1.0',
  ];
  if (!e.attachment) return [...head, 'Content-Type: text/plain; charset=UTF-8', '', e.text, ''].join('\r\n');
  const boundary = `b0undary_${e.n}`;
  return [
    ...head,
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=UTF-8',
    '',
    e.text,
    `--${boundary}`,
    `Content-Type: text/plain; name="${e.attachment.filename}"`,
    `Content-Disposition: attachment; filename="${e.attachment.filename}"`,
    '',
    e.attachment.text,
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

import { createHmac, randomBytes } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { request } from 'undici';

/**
 * Twilio's request signature as its docs define it (independent of the service's code): base64 of
 * HMAC-SHA1, keyed with the auth token, over the full URL followed by every POST parameter's
 * name and value, sorted by name.
 */
export function twilioSignature(authToken: string, url: string, params: Array<[string, string]> | Record<string, string>): string {
  const pairs = Array.isArray(params) ? params : Object.entries(params);
  const sorted = [...pairs].sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return createHmac('sha1', authToken)
    .update(url + sorted.map(([name, value]) => name + value).join(''), 'utf8')
    .digest('base64');
}

/** A message the stand-in was asked to send. */
export interface SentMessage {
  sid: string;
  accountSid: string;
  to: string;
  from: string;
  body: string;
  statusCallback: string;
}

/** What the stand-in's Messages API answers for a `To` number: Twilio's error for it, or the first status. */
export type SendAnswer = { status: 'queued' | 'failed' } | { httpStatus: number; code: number; message: string };

/**
 * A local stand-in for Twilio's REST API, as TWILIO_API_BASE_URL: `GET /2010-04-01/Accounts/{sid}.json`,
 * `GET …/IncomingPhoneNumbers.json?PhoneNumber=` and `POST …/Messages.json` with basic auth (401 with Twilio's error 20003 otherwise), form fields
 * checked as Twilio checks them; media served under `…/Media/{sid}` with basic auth, redirecting to
 * a second server (another origin, as Twilio's media redirect to its CDN). It posts status callbacks
 * signed like Twilio does, to the service through `deliverTo` (the callback URL's origin is
 * PUBLIC_BASE_URL, which a proxy would map to the service).
 */
export class TwilioStandIn {
  readonly sent: SentMessage[] = [];
  /** The `To` of every POST to the Messages API, taken or refused. */
  readonly sendAttempts: string[] = [];
  /** Every request the API server got: method, path, and whether it carried the right basic auth. */
  readonly requests: Array<{ method: string; path: string; authorized: boolean; authorization?: string }> = [];
  /** Every request the CDN server got, with its Authorization header (must never be the account's). */
  readonly cdnRequests: Array<{ path: string; authorization?: string }> = [];
  /** Media served under /Media/{id}: the bytes and type, or an HTTP status to fail with. */
  readonly media = new Map<string, { content: Buffer; type: string } | { status: number }>();
  /** Answers of the Messages API by `To` number; unlisted numbers are queued. */
  readonly answers = new Map<string, SendAnswer>();
  /** The numbers of each account (IncomingPhoneNumbers); see `own`. */
  private readonly numbers = new Map<string, Set<string>>();
  private api!: Server;
  private cdn!: Server;

  constructor(private readonly accounts: Record<string, string>) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.api.address() as AddressInfo).port}`;
  }

  private get cdnUrl(): string {
    return `http://127.0.0.1:${(this.cdn.address() as AddressInfo).port}`;
  }

  async start(): Promise<this> {
    this.api = createServer((req, res) => void this.handle(req, res));
    this.cdn = createServer((req, res) => {
      this.cdnRequests.push({ path: req.url ?? '', authorization: req.headers.authorization });
      const item = this.media.get((req.url ?? '').replace('/cdn/', ''));
      if (!item || 'status' in item) return void res.writeHead(item && 'status' in item ? item.status : 404).end();
      res.writeHead(200, { 'content-type': item.type, 'content-length': item.content.length }).end(item.content);
    });
    await Promise.all([this.api, this.cdn].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    return this;
  }

  async close(): Promise<void> {
    for (const server of [this.api, this.cdn]) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  /** Makes `phoneNumber` one of the account's numbers, as buying it in the console does. */
  own(accountSid: string, phoneNumber: string): this {
    this.numbers.set(accountSid, new Set([...(this.numbers.get(accountSid) ?? []), phoneNumber]));
    return this;
  }

  /** A media URL of an inbound message of `accountSid`, as Twilio puts it in MediaUrl<n>. */
  mediaUrl(accountSid: string, id: string): string {
    return `${this.baseUrl}/2010-04-01/Accounts/${accountSid}/Messages/MM${id}/Media/ME${id}`;
  }

  /**
   * Posts a status callback for a sent message as Twilio does: the form Twilio sends, signed with
   * the account's token over the StatusCallback URL, to the service at `serviceBaseUrl`.
   */
  async callback(serviceBaseUrl: string, message: SentMessage, status: string, extra: Record<string, string> = {}): Promise<{ status: number; body: string }> {
    const params: Record<string, string> = {
      AccountSid: message.accountSid,
      ApiVersion: '2010-04-01',
      From: message.from,
      To: message.to,
      MessageSid: message.sid,
      SmsSid: message.sid,
      MessageStatus: status,
      SmsStatus: status,
      ...extra,
    };
    const url = new URL(message.statusCallback);
    const response = await request(`${serviceBaseUrl}${url.pathname}${url.search}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilioSignature(this.accounts[message.accountSid], message.statusCallback, params),
        'user-agent': 'TwilioProxy/1.1',
      },
      body: new URLSearchParams(params).toString(),
    });
    return { status: response.statusCode, body: await response.body.text() };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
    const path = req.url ?? '';
    const match = /^\/2010-04-01\/Accounts\/([^/]+?)(\.json|\/Messages\.json|\/IncomingPhoneNumbers\.json\?.*|\/Messages\/[^/]+\/Media\/([^/]+))$/.exec(path);
    const accountSid = match ? decodeURIComponent(match[1]) : '';
    const expected = this.accounts[accountSid];
    const authorized = expected !== undefined && req.headers.authorization === `Basic ${Buffer.from(`${accountSid}:${expected}`).toString('base64')}`;
    this.requests.push({ method: req.method ?? '', path, authorized, authorization: req.headers.authorization });
    const json = (status: number, body: object) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (!match) return json(404, { code: 20404, message: 'The requested resource was not found', status: 404 });
    if (!authorized) return json(401, { code: 20003, message: 'Authenticate', more_info: 'https://www.twilio.com/docs/errors/20003', status: 401 });

    if (match[2] === '.json' && req.method === 'GET') return json(200, { sid: accountSid, status: 'active', friendly_name: 'Test account' });
    if (match[2].startsWith('/IncomingPhoneNumbers.json') && req.method === 'GET') {
      const wanted = new URL(path, 'http://x').searchParams.get('PhoneNumber');
      const owned = [...(this.numbers.get(accountSid) ?? [])].filter((n) => wanted === null || n === wanted);
      return json(200, { incoming_phone_numbers: owned.map((n) => ({ sid: `PN${n.slice(1)}`, phone_number: n, account_sid: accountSid })) });
    }
    if (match[3] !== undefined && req.method === 'GET') {
      // Twilio answers a media URL with a redirect to where the file is kept.
      return void res.writeHead(302, { location: `${this.cdnUrl}/cdn/${match[3].replace(/^ME/, '')}` }).end();
    }
    if (match[2] === '/Messages.json' && req.method === 'POST') {
      if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
        return json(400, { code: 20001, message: 'Content-Type must be application/x-www-form-urlencoded', status: 400 });
      }
      const form = new URLSearchParams(await text(req));
      for (const field of ['To', 'From', 'Body']) {
        if (!form.get(field)) return json(400, { code: 21604, message: `A '${field}' parameter is required.`, status: 400 });
      }
      this.sendAttempts.push(form.get('To')!);
      const answer = this.answers.get(form.get('To')!) ?? { status: 'queued' };
      if ('httpStatus' in answer) return json(answer.httpStatus, { code: answer.code, message: answer.message, status: answer.httpStatus });
      const sid = `SM${randomBytes(16).toString('hex')}`;
      this.sent.push({
        sid,
        accountSid,
        to: form.get('To')!,
        from: form.get('From')!,
        body: form.get('Body')!,
        statusCallback: form.get('StatusCallback') ?? '',
      });
      return json(201, {
        sid,
        account_sid: accountSid,
        to: form.get('To'),
        from: form.get('From'),
        body: form.get('Body'),
        status: answer.status,
        error_code: answer.status === 'failed' ? 30008 : null,
        error_message: answer.status === 'failed' ? 'Unknown error' : null,
      });
    }
    return json(405, { code: 20004, message: 'Method not allowed', status: 405 });
  }
}

function text(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

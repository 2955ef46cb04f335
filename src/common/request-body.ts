import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { CanActivate, ExecutionContext, HttpException, HttpStatus, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { Request, Response } from 'express';
import getRawBody from 'raw-body';
import { AppConfig } from '../config/app-config';
import { BodyBudget } from './body-budget';
import { clientKey } from './client-address';
import { exceedsJsonDepth, JSON_TOO_DEEP_MESSAGE } from './json-depth';
import { whenResponseCloses } from './response-close';
import { assertWellFormedRequest } from './well-formed-request';

/**
 * Request bodies are read here, after authentication, never before (docs/security.md):
 *
 * - The global AuthGuard marks a request it authenticated (`allowBodyRead`); the next global
 *   guard, RequestInputGuard, reads the body of a marked request, and parameters such as `@Body()`
 *   are taken from the request only after the guards. A request that fails
 *   authentication is answered 401 while its body is still unread (the connection is then closed,
 *   see `closeIfBodyUnread`), and a public route never has its body read at all.
 * - Compressed bodies (any Content-Encoding but identity) are refused with 415, never inflated.
 * - The route's limit applies (413); a declared Content-Length over it is refused before reading.
 * - The bytes held at once in the process are bounded by a BodyBudget (503 with Retry-After);
 *   bodies read before authentication by a small one of their own, of which one client address
 *   may hold only a share (429 with Retry-After).
 * - JSON nested deeper than MAX_JSON_DEPTH is refused (400) before JSON.parse.
 */

/** How a route takes its body. Routes without this take JSON of at most DEFAULT_JSON_LIMIT bytes. */
export interface RequestBodyOptions {
  /**
   * `json`: parsed into `req.body` (application/json only); `raw`: the bytes as a Buffer in `req.body`;
   * `form`: an HTML form (application/x-www-form-urlencoded, UTF-8) parsed into an object of strings
   * (the first value of a repeated name), line breaks as the person typed them (LF, see parseForm).
   */
  as: 'json' | 'raw' | 'form';
  /**
   * `form` only: what a name given twice means. `first` (the default): its first value, as the
   * pages read their forms; `refused`: 400 naming the field (OAuth's rule, RFC 6749 §3.1: request
   * parameters MUST NOT be included more than once).
   */
  repeated?: 'first' | 'refused';
  /**
   * `json` and `form`: a body of another Content-Type is `unread` (the default: the route's
   * validation then names what is missing) or `refused` (415 naming the type wanted).
   */
  otherTypes?: 'unread' | 'refused';
  /** Largest body in bytes, or how to find it in the configuration. */
  limit: number | ((config: AppConfig) => number);
  /**
   * The body is read before its sender is authenticated (a signature over the body, a sign-in
   * form): it is held in a small budget of its own (UNAUTHENTICATED_BODY_BUDGET_BYTES), never the
   * one authenticated callers share, of which one client address may hold at most
   * HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP (429 beyond), and it must arrive within
   * UNAUTHENTICATED_BODY_DEADLINE_MS (408 otherwise). A flood of such bodies then starves only
   * their own routes, and one address alone cannot starve them.
   */
  unauthenticated?: boolean;
}

export const DEFAULT_JSON_LIMIT = 1024 * 1024;
const DEFAULT_BODY: RequestBodyOptions = { as: 'json', limit: DEFAULT_JSON_LIMIT };
const REQUEST_BODY = 'request-body:options';

/** Declares how a route (or every route of a controller) takes its body. */
export const ReadsBody = (options: RequestBodyOptions) => SetMetadata(REQUEST_BODY, options);

/** Seconds a client is told to wait when the body budget is full. */
const BUDGET_RETRY_AFTER_SECONDS = 1;
/** Bytes of bodies read before authentication held at once: 64 of Twilio's largest forms. */
export const UNAUTHENTICATED_BODY_BUDGET_BYTES = 4 * 1024 * 1024;
/** Time a body read before authentication has to arrive whole (forms of a few KB take milliseconds). */
export const UNAUTHENTICATED_BODY_DEADLINE_MS = 5_000;

/** A request body that was refused; answered by the surface's error filter (REST or JSON-RPC shape). */
export class RequestBodyError extends HttpException {
  constructor(
    status: HttpStatus,
    message: string,
    /** Response headers that belong to the answer (Retry-After, Accept-Encoding). */
    readonly headers: Record<string, string> = {},
    /** What of the request is at fault, named in the answer: `body`, or a header. */
    readonly field?: string,
  ) {
    super(message, status);
  }
}

const BODY_ALLOWED = Symbol('request-body:allowed');

/** Called by the auth guard once the request is authenticated: only then may its body be read. */
export function allowBodyRead(request: IncomingMessage): void {
  (request as IncomingMessage & { [BODY_ALLOWED]?: boolean })[BODY_ALLOWED] = true;
}

function bodyReadAllowed(request: IncomingMessage): boolean {
  return (request as IncomingMessage & { [BODY_ALLOWED]?: boolean })[BODY_ALLOWED] === true;
}

/** True when the request says it carries a body (RFC 9112 §6.3: Transfer-Encoding or Content-Length). */
function hasBody(request: IncomingMessage): boolean {
  return request.headers['transfer-encoding'] !== undefined || request.headers['content-length'] !== undefined;
}

/** A body no larger than this is drained after an early answer (it is all but arrived); a larger one closes the connection. */
const DRAIN_AT_MOST = 64 * 1024;

/**
 * An answer that goes out while a large request body (or one of unknown length) is still
 * arriving closes the connection instead of draining the rest: Node would otherwise read and
 * discard it, however large, to keep the connection alive. A small body is drained, so a client
 * that sent a request with a wrong key keeps its connection. Every error answer passes here
 * (HttpErrorFilter).
 */
export function closeIfBodyUnread(request: IncomingMessage, response: Response): void {
  if (!hasBody(request) || request.complete || response.headersSent) return;
  const length = Number(request.headers['content-length'] ?? Number.NaN);
  if (request.headers['transfer-encoding'] !== undefined || !(length <= DRAIN_AT_MOST)) {
    response.setHeader('Connection', 'close');
    lingerBeforeClosing(request.socket);
  }
}

/** After an early answer, request bytes still arriving are read and dropped for at most this long... */
const LINGER_MS = 2_000;
/** ...and at most this many bytes; then the connection is destroyed. */
const LINGER_BYTES = 4 * 1024 * 1024;

/**
 * A lingering close, as nginx makes one. Destroying a socket while request bytes sit unread in its
 * receive buffer makes the kernel answer with a reset, and a reset can erase the answer before
 * the client has read it: a client that sent its body at once would see "connection reset"
 * instead of the 401 or 413. Node's server closes a `Connection: close` socket with destroySoon()
 * when the socket has one, and with end() otherwise; without it, end() sends the answer and a
 * FIN while the rest of the body is still read and dropped (the request is dumped, nothing is
 * kept), until the client closes, LINGER_BYTES more have come, or LINGER_MS have passed.
 */
function lingerBeforeClosing(socket: Socket): void {
  const closing = socket as unknown as { destroySoon?: () => void };
  if (closing.destroySoon === undefined) return; // already lingering
  closing.destroySoon = undefined;
  let dropped = 0;
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_BYTES) socket.destroy();
  };
  socket.on('data', onData);
  socket.once('finish', () => {
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
}

/**
 * Reads request bodies by the rules above, holding them in the process's budgets: one instance
 * per app (configureHttpApp), shared by RequestInputGuard and the OAuth protocol routes, which
 * live outside Nest's router (oauth/oauth-routes.ts) and read their small bodies unauthenticated.
 */
export class BodyReader {
  private readonly budget: BodyBudget;
  private readonly unauthenticatedBudget: BodyBudget;

  constructor(private readonly config: AppConfig) {
    this.budget = new BodyBudget(config.http.bodyBudgetBytes);
    this.unauthenticatedBudget = new BodyBudget(UNAUTHENTICATED_BODY_BUDGET_BYTES, config.http.unauthenticatedBodyBytesPerIp);
  }

  /** The request's body as `options` say; undefined when it has none, or is not of the route's type and left unread. Throws RequestBodyError. */
  async read(request: Request, response: Response, options: RequestBodyOptions): Promise<unknown> {
    if (!hasBody(request)) return undefined;
    const encoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding !== 'identity') {
      throw new RequestBodyError(
        HttpStatus.UNSUPPORTED_MEDIA_TYPE,
        `Content-Encoding ${encoding} is not accepted: send the request body uncompressed`,
        { 'Accept-Encoding': 'identity' },
        'Content-Encoding',
      );
    }
    if (options.as !== 'raw') {
      // Not of the route's type: left unread, as body-parser did; the route's validation then names
      // what is missing (a page's form its fields and its `_csrf`). Or refused, when the route says so.
      const type = options.as === 'json' ? 'application/json' : 'application/x-www-form-urlencoded';
      if (!request.is(type)) {
        if (options.otherTypes !== 'refused') return undefined;
        throw new RequestBodyError(HttpStatus.UNSUPPORTED_MEDIA_TYPE, `the request body must be ${type}`, {}, 'Content-Type');
      }
      const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase();
      if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
        const what = options.as === 'json' ? 'JSON' : 'forms';
        throw new RequestBodyError(HttpStatus.UNSUPPORTED_MEDIA_TYPE, `charset ${charset} is not accepted: ${what} must be UTF-8`, {}, 'Content-Type');
      }
    }
    const limit = typeof options.limit === 'function' ? options.limit(this.config) : options.limit;
    const declared = request.headers['content-length'] === undefined ? undefined : Number(request.headers['content-length']);
    if (declared !== undefined && declared > limit) throw tooLarge(limit);

    // Unauthenticated, the sender is known only by its address (as TRUST_PROXY makes request.ip): each may hold a share.
    const release = options.unauthenticated
      ? this.unauthenticatedBudget.tryReserve(declared ?? limit, clientKey(request.ip))
      : this.budget.tryReserve(declared ?? limit);
    if (release === 'client-share') {
      throw new RequestBodyError(
        HttpStatus.TOO_MANY_REQUESTS,
        `this address may hold at most ${this.unauthenticatedBudget.perClient} bytes of request bodies read before authentication at once (HTTP_UNAUTHENTICATED_BODY_BYTES_PER_IP), and its requests still being read hold them; retry when they are done`,
        { 'Retry-After': String(BUDGET_RETRY_AFTER_SECONDS) },
      );
    }
    if (release === 'full') {
      throw new RequestBodyError(HttpStatus.SERVICE_UNAVAILABLE, 'the server is reading as many request bodies as it can hold; retry shortly', {
        'Retry-After': String(BUDGET_RETRY_AFTER_SECONDS),
      });
    }
    // Held until the answer is done: the body (and what is parsed from it) lives that long. Its
    // client may have gone during the authentication already: then given back at once.
    whenResponseCloses(response, release);
    // A client that asked (Expect: 100-continue) is told to send the body only now, authenticated.
    if (/100-continue/i.test(String(request.headers.expect ?? '')) && !response.headersSent) response.writeContinue();

    let bytes: Buffer;
    let deadline: NodeJS.Timeout | undefined;
    try {
      const reading = getRawBody(request, { length: declared, limit });
      bytes = options.unauthenticated
        ? await Promise.race([
            reading,
            new Promise<never>((_, reject) => {
              deadline = setTimeout(() => reject({ type: 'deadline' }), UNAUTHENTICATED_BODY_DEADLINE_MS);
            }),
          ])
        : await reading;
    } catch (error) {
      throw readFailure(error as { type?: string }, limit);
    } finally {
      clearTimeout(deadline);
    }
    if (options.as === 'raw') return bytes;
    if (options.as === 'form') return parseForm(bytes, options.repeated ?? 'first');
    return parseJson(bytes);
  }
}

/**
 * What every request goes through after the auth guard and before the pipes: its body is read
 * (BodyReader, above), then its text is checked (assertWellFormedRequest). A global guard,
 * registered after AuthGuard (configureHttpApp), rather than an interceptor: guards run in order
 * and finish before `@Body()` is read, and any global interceptor puts every request through rxjs
 * and async-context binds in Nest (about 0.15 ms of CPU per tool call, measured).
 */
@Injectable()
export class RequestInputGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly bodies: BodyReader,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() === 'http') {
      const http = context.switchToHttp();
      const request = http.getRequest<Request>();
      if (bodyReadAllowed(request) && hasBody(request)) {
        const options = this.reflector.getAllAndOverride<RequestBodyOptions>(REQUEST_BODY, [context.getHandler(), context.getClass()]) ?? DEFAULT_BODY;
        request.body = await this.bodies.read(request, http.getResponse<Response>(), options);
      }
      assertWellFormedRequest(this.reflector, context);
    }
    return true;
  }
}

function tooLarge(limit: number): RequestBodyError {
  return new RequestBodyError(HttpStatus.PAYLOAD_TOO_LARGE, `the request body is larger than ${limit} bytes`, {}, 'body');
}

function readFailure(error: { type?: string }, limit: number): RequestBodyError {
  switch (error.type) {
    case 'entity.too.large':
      return tooLarge(limit);
    case 'request.size.invalid':
      return new RequestBodyError(HttpStatus.BAD_REQUEST, 'the request body does not match its Content-Length', {}, 'body');
    case 'deadline':
      return new RequestBodyError(
        HttpStatus.REQUEST_TIMEOUT,
        `the request body did not arrive within ${UNAUTHENTICATED_BODY_DEADLINE_MS} ms (a body read before authentication must come at once)`,
        {},
        'body',
      );
    case 'request.aborted':
      return new RequestBodyError(HttpStatus.BAD_REQUEST, 'the request was aborted before its body was complete', {}, 'body');
    default:
      return new RequestBodyError(HttpStatus.BAD_REQUEST, 'the request body could not be read', {}, 'body');
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A urlencoded form as an object of strings; a name given twice keeps its first value, or is
 * refused (400 naming it) when `repeated` says so. Parsed as
 * URLSearchParams parses it, except that bytes which are not UTF-8 (raw, or percent-encoded) are
 * refused (400 naming the field) rather than turned into U+FFFD behind the person's back, and that
 * line breaks are LF again: HTML's form encoding sends every line break of every field (a
 * textarea's, a hidden field's) as CRLF, so a reply, a note or a draft is kept, counted and sent as
 * it was typed, one character per line break, and a hidden value carrying a line break comes back
 * as it was rendered. A lone CR becomes LF too.
 */
function parseForm(bytes: Buffer, repeated: 'first' | 'refused'): Record<string, string> {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    throw new RequestBodyError(HttpStatus.BAD_REQUEST, 'the form is not UTF-8 text', {}, 'body');
  }
  const fields: Record<string, string> = {};
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    const rawName = at === -1 ? pair : pair.slice(0, at);
    const name = decodeFormText(rawName);
    if (name === null) {
      const shown = [...new URLSearchParams(rawName).keys()][0] ?? rawName;
      throw new RequestBodyError(HttpStatus.BAD_REQUEST, `the name of the field ${JSON.stringify(shown)} is not UTF-8 text`, {}, 'body');
    }
    const decoded = decodeFormText(at === -1 ? '' : pair.slice(at + 1));
    if (decoded === null) throw new RequestBodyError(HttpStatus.BAD_REQUEST, `the field ${JSON.stringify(name)} is not UTF-8 text`, {}, name);
    const value = decoded.replace(/\r\n?/g, '\n');
    if (!Object.prototype.hasOwnProperty.call(fields, name))
      Object.defineProperty(fields, name, { value, enumerable: true, writable: true, configurable: true });
    else if (repeated === 'refused') throw new RequestBodyError(HttpStatus.BAD_REQUEST, `the field ${JSON.stringify(name)} is given more than once`, {}, name);
  }
  return fields;
}

/** One name or value of a urlencoded form: `+` is a space, a `%` not followed by two hex digits stays as it is; null when the bytes are not UTF-8. */
function decodeFormText(text: string): string | null {
  try {
    return decodeURIComponent(text.replaceAll('+', ' ').replace(/%(?![0-9a-f]{2})/gi, '%25'));
  } catch {
    return null;
  }
}

/** Strict JSON (an object or an array at the top, as body-parser's strict mode), depth checked first. */
function parseJson(bytes: Buffer): unknown {
  if (bytes.length === 0) return {};
  if (exceedsJsonDepth(bytes)) throw new RequestBodyError(HttpStatus.BAD_REQUEST, JSON_TOO_DEEP_MESSAGE, {}, 'body');
  const text = bytes.toString('utf8');
  const first = /\S/.exec(text)?.[0];
  try {
    if (first !== '{' && first !== '[') throw new SyntaxError('not an object or array');
    return JSON.parse(text);
  } catch {
    throw new RequestBodyError(HttpStatus.BAD_REQUEST, 'the request body is not valid JSON', {}, 'body');
  }
}

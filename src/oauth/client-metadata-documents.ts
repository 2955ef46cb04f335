import { Injectable } from '@nestjs/common';
import { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import { Agent, request } from 'undici';
import { Clock } from '../common/clock';
import { UrlRefusedError } from '../common/errors';
import { pinnedLookup, UrlPolicy } from '../outbound-http';
import { clientMetadataOf, ClientMetadataProblem } from './client-metadata';

/** Largest document read (the draft's recommendation: 5 KB); a longer one is refused, not cut. */
export const MAX_DOCUMENT_BYTES = 5 * 1024;
/** The whole fetch (connect, headers, body) must be done within this. */
export const DOCUMENT_TIMEOUT_MS = 5_000;
/** A document is kept at least this long, whatever its caching headers say (no-store included). */
export const CACHE_FLOOR_SECONDS = 5 * 60;
/** ... and at most this long, whatever they say. */
export const CACHE_CEILING_SECONDS = 24 * 60 * 60;
/** Documents kept at once; the oldest goes first. */
export const CACHE_ENTRIES = 1000;
/** A document that could not be fetched or used is not fetched again for this long (the negative cache)... */
export const FAILURE_CACHE_SECONDS = 60;
/** ... in at most this many entries; the oldest goes first. */
export const FAILURE_CACHE_ENTRIES = 1000;

/** What went wrong with a client's metadata document: the authorization page names it to a signed-in person (OAuthService.checkRequest). */
export type DocumentProblem =
  | 'bad_client_id'
  | 'private_address'
  | 'unreachable'
  | 'too_slow'
  | 'redirected'
  | 'not_found'
  | 'bad_status'
  | 'too_large'
  | 'bad_json'
  | 'client_id_differs'
  | 'bad_redirect_uris'
  | 'bad_metadata';

export class ClientDocumentError extends Error {
  constructor(
    readonly problem: DocumentProblem,
    message: string,
  ) {
    super(message);
  }
}

/** A client known by its metadata document: the registration the document makes, and where it was fetched. */
export interface DocumentClient {
  information: OAuthClientInformationFull;
  host: string;
}

/** A client_id naming a metadata document (an http(s) URL); every other client_id is a self-registration's. */
export function isDocumentClientId(clientId: string): boolean {
  return /^https?:\/\//i.test(clientId);
}

/**
 * The draft's rules for a client_id URL (draft-ietf-oauth-client-id-metadata-document §3): https
 * (http only where the URL policy admits it, in development), a path, no fragment, no credentials,
 * no `.` or `..` segment (the WHATWG parser would silently remove them, so the raw text is read).
 */
export function clientIdUrlProblem(clientId: string): string | null {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f\\]/.test(clientId)) return 'it must not contain spaces, control characters or backslashes';
  if (clientId.includes('#')) return 'it must not have a fragment';
  const afterScheme = clientId.replace(/^https?:\/\//i, '');
  const authorityEnd = afterScheme.search(/[/?]/);
  const authority = authorityEnd === -1 ? afterScheme : afterScheme.slice(0, authorityEnd);
  if (authority === '') return 'it must have a host';
  if (authority.includes('@')) return 'it must not contain credentials (user:password@)';
  const path = authorityEnd === -1 || afterScheme[authorityEnd] !== '/' ? '' : afterScheme.slice(authorityEnd).split('?')[0];
  if (path === '' || path === '/') return 'it must have a path (e.g. https://app.example/oauth/client.json)';
  if (path.split('/').some((segment) => ['.', '..'].includes(segment.replace(/%2e/gi, '.')))) return 'it must not contain . or .. path segments';
  try {
    new URL(clientId);
  } catch {
    return 'it is not a valid absolute URL';
  }
  return null;
}

/**
 * OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, as the MCP
 * 2025-11-25 authorization spec uses them; docs/mcp.md "Connecting Claude, ChatGPT and other OAuth
 * clients"): a client_id that is a URL names a JSON client registration the service fetches.
 *
 * The fetch goes through the webhook URL policy (public addresses only, WEBHOOK_ALLOWED_CIDRS the
 * exception, http in development only) and connects to the address it checked (pinned); no
 * redirect is followed; at most MAX_DOCUMENT_BYTES within DOCUMENT_TIMEOUT_MS. A good document is
 * cached as its Cache-Control max-age or Expires say, between CACHE_FLOOR_SECONDS and
 * CACHE_CEILING_SECONDS, in at most CACHE_ENTRIES entries; a failure is cached too, for
 * FAILURE_CACHE_SECONDS in at most FAILURE_CACHE_ENTRIES entries, so that repeated authorization
 * requests naming a failing URL do not fetch it each time. Concurrent requests for one URL share
 * one fetch. Only the authorization endpoint calls this (OAuthService.checkRequest and approve).
 */
@Injectable()
export class ClientMetadataDocuments {
  private readonly documents = new ExpiringEntries<DocumentClient>(CACHE_ENTRIES);
  private readonly failures = new ExpiringEntries<ClientDocumentError>(FAILURE_CACHE_ENTRIES);
  private readonly pending = new Map<string, Promise<DocumentClient>>();

  constructor(
    private readonly policy: UrlPolicy,
    private readonly clock: Clock,
  ) {}

  /** The client the document at `clientId` registers; throws ClientDocumentError naming what is wrong. */
  async resolve(clientId: string): Promise<DocumentClient> {
    const now = this.clock.now().getTime();
    const cached = this.documents.get(clientId, now);
    if (cached) return cached;
    const failed = this.failures.get(clientId, now);
    if (failed) throw failed;
    let fetching = this.pending.get(clientId);
    if (!fetching) {
      fetching = this.fetchDocument(clientId)
        .then(
          ({ client, seconds }) => {
            this.documents.set(clientId, client, this.clock.now().getTime() + seconds * 1000);
            return client;
          },
          (error: unknown) => {
            if (error instanceof ClientDocumentError) this.failures.set(clientId, error, this.clock.now().getTime() + FAILURE_CACHE_SECONDS * 1000);
            throw error;
          },
        )
        .finally(() => this.pending.delete(clientId));
      this.pending.set(clientId, fetching);
    }
    return fetching;
  }

  private async fetchDocument(clientId: string): Promise<{ client: DocumentClient; seconds: number }> {
    const problem = clientIdUrlProblem(clientId);
    if (problem) throw new ClientDocumentError('bad_client_id', `The client_id ${clientId} cannot name a metadata document: ${problem}.`);
    let checked;
    try {
      checked = await this.policy.check(clientId);
    } catch (error) {
      if (!(error instanceof UrlRefusedError)) throw error;
      const reason = error.message.replace(/;\s*webhook URLs must be public$/, '').replace(/^url /, '');
      if (/could not be resolved|does not resolve/.test(reason))
        throw new ClientDocumentError('unreachable', `The app's metadata document ${clientId} cannot be fetched: ${reason}.`);
      const publicOnly = /address/.test(reason) ? ' Documents must be on public addresses.' : '';
      throw new ClientDocumentError('private_address', `The app's metadata document ${clientId} is refused: ${reason}.${publicOnly}`);
    }
    const where = `The app's metadata document ${clientId}`;
    const signal = AbortSignal.timeout(DOCUMENT_TIMEOUT_MS);
    const dispatcher = new Agent({ connect: { lookup: pinnedLookup(checked.addresses[0]), timeout: DOCUMENT_TIMEOUT_MS } as object });
    try {
      let response;
      try {
        response = await request(checked.url, {
          method: 'GET',
          dispatcher,
          headers: { accept: 'application/json' },
          signal,
          headersTimeout: DOCUMENT_TIMEOUT_MS,
          bodyTimeout: DOCUMENT_TIMEOUT_MS,
        });
      } catch (error) {
        if (signal.aborted || isTimeout(error)) throw new ClientDocumentError('too_slow', `${where} did not answer within ${DOCUMENT_TIMEOUT_MS / 1000} s.`);
        throw new ClientDocumentError('unreachable', `${where} could not be fetched: ${describe(error)}.`);
      }
      const status = response.statusCode;
      if (status !== 200) {
        await response.body.dump().catch(() => undefined);
        if (status >= 300 && status < 400) throw new ClientDocumentError('redirected', `${where} answered a redirect (${status}); redirects are not followed.`);
        if (status === 404 || status === 410) throw new ClientDocumentError('not_found', `${where} was not found (${status}).`);
        throw new ClientDocumentError('bad_status', `${where} answered ${status}, not 200.`);
      }
      const body = await readLimited(response.body, signal, where);
      let document: unknown;
      try {
        document = JSON.parse(body.toString('utf8'));
      } catch {
        throw new ClientDocumentError('bad_json', `${where} is not valid JSON.`);
      }
      const information = registrationOf(document, clientId, where);
      return { client: { information, host: checked.url.host }, seconds: cacheSeconds(response.headers, this.clock.now().getTime()) };
    } finally {
      void dispatcher.close().catch(() => undefined);
    }
  }
}

async function readLimited(body: AsyncIterable<Buffer> & { destroy: (error?: Error) => void }, signal: AbortSignal, where: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > MAX_DOCUMENT_BYTES) {
        body.destroy();
        throw new ClientDocumentError('too_large', `${where} is larger than ${MAX_DOCUMENT_BYTES} bytes.`);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof ClientDocumentError) throw error;
    if (signal.aborted || isTimeout(error)) throw new ClientDocumentError('too_slow', `${where} was not read within ${DOCUMENT_TIMEOUT_MS / 1000} s.`);
    throw new ClientDocumentError('unreachable', `${where} could not be read: ${describe(error)}.`);
  }
  return Buffer.concat(chunks);
}

/**
 * The document as a client registration: its client_id equal to the URL (simple string
 * comparison), and its metadata by the rule of every registration (client-metadata.ts, as a
 * document: a public client, no secret, `https` URIs), fields the service does not understand left out.
 */
function registrationOf(document: unknown, clientId: string, where: string): OAuthClientInformationFull {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) throw new ClientDocumentError('bad_json', `${where} is not a JSON object.`);
  const d = document as Record<string, unknown>;
  if (d.client_id !== clientId) {
    const named = typeof d.client_id === 'string' ? d.client_id : JSON.stringify(d.client_id ?? null);
    throw new ClientDocumentError('client_id_differs', `${where} names client_id ${named}, not its own URL.`);
  }
  try {
    return { ...clientMetadataOf(d, 'document'), client_id: clientId };
  } catch (error) {
    if (!(error instanceof ClientMetadataProblem)) throw error;
    throw new ClientDocumentError(error.field === 'redirect_uris' ? 'bad_redirect_uris' : 'bad_metadata', `${where}: ${error.message}.`);
  }
}

/**
 * Entries that end at a time each was given, at most `capacity` of them (the oldest set goes
 * first): the documents and the failures of ClientMetadataDocuments.
 */
class ExpiringEntries<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(private readonly capacity: number) {}

  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.until > now) return entry.value;
    if (entry) this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: V, until: number): void {
    this.entries.delete(key);
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, until });
  }
}

/** Cache-Control max-age (no-store and no-cache count as 0), else Expires, else the floor; always within floor and ceiling. */
function cacheSeconds(headers: Record<string, string | string[] | undefined>, now: number): number {
  const header = (name: string) =>
    [headers[name]]
      .flat()
      .filter((v): v is string => typeof v === 'string')
      .join(',');
  const control = header('cache-control');
  let seconds: number | undefined;
  const maxAge = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/i.exec(control);
  if (/(?:^|,)\s*(no-store|no-cache)\b/i.test(control)) seconds = 0;
  else if (maxAge) seconds = Number(maxAge[1]);
  else if (header('expires')) {
    const at = Date.parse(header('expires'));
    if (!Number.isNaN(at)) seconds = Math.floor((at - now) / 1000);
  }
  return Math.max(CACHE_FLOOR_SECONDS, Math.min(CACHE_CEILING_SECONDS, seconds ?? CACHE_FLOOR_SECONDS));
}

function isTimeout(error: unknown): boolean {
  const code = (error as { code?: string })?.code;
  return (
    code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || (error as Error)?.name === 'TimeoutError'
  );
}

function describe(error: unknown): string {
  const e = error as { code?: string; message?: string };
  return [e?.code, e?.message].filter(Boolean).join(': ').slice(0, 200) || 'network error';
}

import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import {
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
  OAuthError,
  UnsupportedResponseTypeError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { OAuthClientInformationFull, OAuthTokenRevocationRequest, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { Request } from 'express';
import { AccountsService } from '../accounts/accounts.service';
import { CredentialResolver } from '../identity/credential-resolver';
import { AccessView, accessView, PersonChannelAccess } from '../identity/line-selection';
import { KeyPrincipal, PrincipalRef } from '../identity/principal';
import { CredentialChanges } from '../auth/credential-changes';
import { GrantCallers } from '../identity/grant-callers';
import { ALL_KEY_PERMISSIONS, KEY_PERMISSIONS, KeyPermission } from '../identity/key-permissions';
import { PersonApiKeysService } from '../auth/person-api-keys.service';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { Clock } from '../common/clock';
import { NotFoundError, ResourceChallenge, ValidationError } from '../common/errors';
import { isUuid } from '../common/uuid';
import { ClientMetadata, clientMetadataOf, ClientMetadataProblem, isLoopbackHost } from './client-metadata';
import { ClientDocumentError, ClientMetadataDocuments, isDocumentClientId } from './client-metadata-documents';
import { ClientRow, GrantAccess, GrantListRow, OAuthRepository, TokenCallerRow, TokenPair } from './oauth.repository';

export const ACCESS_TOKEN_SECONDS = 60 * 60;
export const REFRESH_TOKEN_SECONDS = 30 * 24 * 60 * 60;
export const CODE_SECONDS = 60;
/** The MCP endpoint: the one protected resource. */
export const MCP_RESOURCE_PATH = '/api/mcp';
/**
 * The scopes a client may ask for: the permissions of an API key (identity/key-permissions.ts),
 * `draft` among them (a client may ask for both send and draft: the person grants one).
 */
export const SCOPES: readonly KeyPermission[] = KEY_PERMISSIONS;

const ACCESS_TOKEN = /^csa_[0-9a-f]{48}$/;
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** An authorization request that passed every check: what the consent page shows and posts back. */
export interface AuthorizationRequest {
  /**
   * How the client is known: it registered itself (Dynamic Client Registration), or its client_id
   * is the URL of its metadata document, fetched from `documentHost`.
   */
  client: {
    id: string;
    name: string | null;
    /** Where the person returns: the redirect URI's host (with its port), and its hostname alone. */
    redirectHost: string;
    redirectHostname: string;
    /** The redirect URI is on the person's own computer (isLoopbackHost): any program there could claim to be this app. */
    loopbackRedirect: boolean;
  } & ({ registration: 'self-registered' } | { registration: 'metadata-document'; documentHost: string });
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  state?: string;
  resource: string;
  /** The permissions the client asked for (scope); read, send and webhooks when it named none. */
  scopes: KeyPermission[];
}

/** How a client's identity was established: by a self-registration (RFC 7591), or by its Client ID Metadata Document. */
export type ClientRegistration = 'self-registered' | 'metadata-document';

/** A grant as its person (Settings → Connected apps) and the operators (admin API) see it: never a token. */
export interface GrantView {
  id: string;
  userId: string;
  client: { id: string; name: string | null; redirectHost: string; registration: ClientRegistration };
  /** LINES: the chosen lines by address, with the org's live line at each (id null when none: it grants nothing). */
  channelAccess: AccessView<{ id: string | null; address: string }>;
  permissions: KeyPermission[];
  /** The scope the app asked for when it was connected: `permissions` never hold more (updateGrantAccess). */
  requestedScopes: KeyPermission[];
  createdAt: Date;
  /** To the minute (written at most once a minute); null until its first access token was used. */
  lastUsedAt: Date | null;
}

/**
 * All a person not signed in reads when the app's client_id cannot be used, whatever the reason
 * (OAuthService.checkRequest): the error of OAuth, invalid_client, and nothing that tells one failure from another.
 */
export const UNUSABLE_CLIENT_PAGE = 'This app cannot be connected: its client ID is not valid here (invalid_client). Sign in to this service to see why.';

/** Where the person's browser goes: a page naming the problem (no redirect URI to trust), or the client with an error. */
export type AuthorizationCheck = { ok: AuthorizationRequest } | { page: string } | { redirect: string };

/** What a person chooses for an app, at consent and in Settings → Connected apps: as for an API key. */
export interface GrantChoice {
  channelAccess: PersonChannelAccess;
  permissions: KeyPermission[];
}

function sha256(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** A random UUID of version 8 (RFC 9562): a grant's id, never equal to an API key's (version 4). */
function grantId(): string {
  const b = randomBytes(16);
  b[6] = (b[6] & 0x0f) | 0x80;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * The service as the OAuth 2.1 authorization server of its MCP endpoint (docs/mcp.md, "Connecting
 * Claude, ChatGPT and other OAuth clients"; docs/decisions.md, "OAuth authorization server"). The
 * official MCP SDK's handlers speak the token, registration and revocation protocol
 * (oauth-routes.ts) and call this provider; the authorization request and the consent are the web
 * app's (web/consent/consent.controller.tsx), checked here. A grant acts exactly as an API key of its
 * person with the access chosen at consent.
 */
@Injectable()
export class OAuthService extends GrantCallers implements OAuthServerProvider, OAuthRegisteredClientsStore, BeforeApplicationShutdown {
  readonly issuer: string;
  readonly resource: string;
  private readonly logger = new Logger(OAuthService.name);
  /** Access tokens resolve to their grant's principal as API keys do (identity/credential-resolver.ts). */
  private readonly credentials: CredentialResolver<TokenCallerRow>;

  constructor(
    private readonly repository: OAuthRepository,
    private readonly personKeys: PersonApiKeysService,
    private readonly documents: ClientMetadataDocuments,
    private readonly accounts: AccountsService,
    private readonly changes: CredentialChanges,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    super();
    this.credentials = new CredentialResolver<TokenCallerRow>({
      rows: (hashes) => this.repository.callerRows(hashes),
      hashOf: (row) => row.token_hash,
      stamp: (grantId, now) => this.repository.touchGrant(grantId, now),
      clock,
      logger: this.logger,
      what: 'OAuth grant',
    });
    this.issuer = config.publicBaseUrl;
    this.resource = `${config.publicBaseUrl}${MCP_RESOURCE_PATH}`;
  }

  get clientsStore(): OAuthRegisteredClientsStore {
    return this;
  }

  // ---- clients (RFC 7591) ----

  /**
   * The client the token and revocation endpoints (the SDK's handlers) authenticate, from a row
   * only, never a fetch: a self-registration's, or, for a client_id that is a URL, the registration
   * its metadata document made when a person last approved it (upserted by `approve`; a code or a
   * refresh token exists only after an approval). A URL no person approved here is unknown at once
   * (the SDK answers invalid_client): only the authorization endpoint, limited per address, fetches
   * documents, so nobody can make the service fetch a URL by naming it at these endpoints.
   */
  async getClient(clientId: string): Promise<OAuthClientInformationFull | undefined> {
    const row = await this.repository.findClient(clientId);
    return row ? toClientInformation(row) : undefined;
  }

  /** The client as the authorization request sees it, or why it cannot be used (invalid_client). */
  private async knownClient(
    clientId: string,
  ): Promise<
    { client: Pick<AuthorizationRequest['client'], 'name' | 'registration'> & { documentHost?: string; redirectUris: string[] } } | { invalid: string }
  > {
    if (isDocumentClientId(clientId)) {
      try {
        const { information, host } = await this.documents.resolve(clientId);
        const name = typeof information.client_name === 'string' ? information.client_name : null;
        return { client: { name, registration: 'metadata-document', documentHost: host, redirectUris: information.redirect_uris } };
      } catch (error) {
        if (error instanceof ClientDocumentError) return { invalid: `${error.message} (invalid_client)` };
        throw error;
      }
    }
    const row = await this.repository.findClient(clientId);
    if (!row) return { invalid: `No app ${clientId} is registered here (invalid_client).` };
    return { client: { name: row.client_name, registration: 'self-registered', redirectUris: row.redirect_uris } };
  }

  /**
   * Dynamic Client Registration (RFC 7591; POST /oauth/register, oauth-routes.ts): the metadata
   * by the one rule of client metadata (client-metadata.ts: the fields understood, each bounded,
   * the whole at most 8 KB; others dropped), refused with invalid_client_metadata naming the field.
   * Public clients only: whatever authentication method was asked for, the client gets none and no
   * secret. Answers the registration as stored, with its new client_id.
   */
  async register(body: unknown): Promise<OAuthClientInformationFull> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidClientMetadataError('the registration must be a JSON object');
    let metadata: ClientMetadata;
    try {
      metadata = clientMetadataOf(body as Record<string, unknown>, 'registration');
    } catch (error) {
      if (error instanceof ClientMetadataProblem) throw new InvalidClientMetadataError(error.message);
      throw error;
    }
    const clientId = randomUUID();
    const issuedAt = Math.floor(this.clock.now().getTime() / 1000);
    await this.repository.insertClient({ clientId, clientName: metadata.client_name ?? null, redirectUris: metadata.redirect_uris, metadata });
    return { ...metadata, client_id: clientId, client_id_issued_at: issuedAt };
  }

  // ---- the authorization request and consent ----

  /**
   * Checks an authorization request as the consent page receives it (RFC 6749 §4.1.1, PKCE S256
   * required, RFC 8707 `resource` required and equal to the MCP endpoint). Without a known client
   * and a registered redirect URI (exact match), nothing is redirected: the page names the problem.
   *
   * Why a client cannot be used (a metadata document not found, refused, too slow, on a private
   * address, not JSON…) is said to a signed-in person only, who may be the developer of the app;
   * the request is checked before sign-in, and to anybody else the page says UNUSABLE_CLIENT_PAGE
   * alone, so the public page cannot tell which hosts and ports answer. The log keeps the reason.
   */
  async checkRequest(query: Record<string, unknown>, viewer: { signedIn: boolean }): Promise<AuthorizationCheck> {
    const text = (name: string): string | undefined => (typeof query[name] === 'string' ? (query[name] as string) : undefined);
    const clientId = text('client_id');
    if (!clientId) return { page: 'The request names no app (client_id is missing).' };
    const known = await this.knownClient(clientId);
    if ('invalid' in known) {
      this.logger.log(`authorization request refused: ${known.invalid}`);
      return { page: viewer.signedIn ? known.invalid : UNUSABLE_CLIENT_PAGE };
    }
    const { client } = known;
    let redirectUri = text('redirect_uri');
    if (redirectUri === undefined) {
      if (client.redirectUris.length !== 1) return { page: 'redirect_uri is required: the app registered more than one.' };
      redirectUri = client.redirectUris[0];
    } else if (!client.redirectUris.includes(redirectUri)) {
      return { page: `redirect_uri ${redirectUri} is not registered for this app (invalid_request).` };
    }
    const state = text('state');
    const refuse = (error: OAuthError): AuthorizationCheck => ({
      redirect: this.responseUrl(redirectUri, { error: error.errorCode, error_description: error.message, state }),
    });
    if (text('response_type') !== 'code') return refuse(new UnsupportedResponseTypeError('response_type must be code'));
    const challenge = text('code_challenge');
    if (!challenge) return refuse(new InvalidRequestError('code_challenge is required (PKCE with S256)'));
    if (text('code_challenge_method') !== 'S256') return refuse(new InvalidRequestError('code_challenge_method must be S256'));
    if (!CODE_CHALLENGE.test(challenge)) return refuse(new InvalidRequestError('code_challenge must be 43 base64url characters (S256)'));
    const resource = text('resource');
    if (resource === undefined) return refuse(new InvalidTargetError(`resource is required: ${this.resource}`));
    if (resource !== this.resource) return refuse(new InvalidTargetError(`resource must be ${this.resource}`));
    const returnsTo = new URL(redirectUri);
    const scope = text('scope');
    const scopes = scope === undefined || scope.trim() === '' ? [...ALL_KEY_PERMISSIONS] : scope.trim().split(/\s+/);
    const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
    if (unknown.length > 0) return refuse(new InvalidScopeError(`scope: ${unknown.join(' ')} is not one of ${SCOPES.join(', ')}`));
    return {
      ok: {
        client: {
          id: clientId,
          name: client.name,
          redirectHost: returnsTo.host,
          redirectHostname: returnsTo.hostname,
          loopbackRedirect: isLoopbackHost(returnsTo.hostname),
          ...(client.registration === 'metadata-document'
            ? { registration: client.registration, documentHost: client.documentHost! }
            : { registration: client.registration }),
        },
        clientId,
        redirectUri,
        codeChallenge: challenge,
        state,
        resource,
        scopes: SCOPES.filter((s) => scopes.includes(s)),
      },
    };
  }

  /**
   * The person allowed: a grant with the access they chose (the rules of an API key, and no
   * permission the client did not ask for: grantAccess), and a code for the client.
   */
  async approve(person: PrincipalRef, request: AuthorizationRequest, choice: GrantChoice): Promise<string> {
    const access = await this.grantAccess(person, choice, request.scopes);
    if (request.client.registration === 'metadata-document') {
      // The grant's client row: the document's registration as approved now. The token and revocation endpoints know the client by it (getClient), never by a fetch.
      const { information } = await this.documents.resolve(request.clientId);
      await this.repository.upsertDocumentClient({
        clientId: request.clientId,
        clientName: request.client.name,
        redirectUris: information.redirect_uris,
        metadata: { ...information, client_id: undefined, metadata_document: true },
      });
    }
    const id = grantId();
    await this.repository.insertGrant({
      id,
      user_id: person.userId,
      client_id: request.clientId,
      resource: request.resource,
      ...access,
      requested_scopes: request.scopes,
    });
    const code = randomBytes(32).toString('base64url');
    await this.repository.insertCode({
      codeHash: sha256(code),
      grantId: id,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      expiresAt: new Date(Date.now() + CODE_SECONDS * 1000),
    });
    return this.responseUrl(request.redirectUri, { code, state: request.state });
  }

  /**
   * The grant's columns for the person's choice: channel access and permissions by the rules of an
   * API key (PersonApiKeysService.checkedAccessFor: the lines must be the person's own), and only
   * permissions the client asked for (`scope`): OAuth lets the person grant less than the client
   * asked for (RFC 6749 §3.3), and this service never grants more, so a client that asked only to
   * read is never handed send. Refused with a ValidationError naming `permissions`.
   */
  private async grantAccess(person: PrincipalRef, choice: GrantChoice, scope: readonly KeyPermission[]): Promise<GrantAccess> {
    const access = await this.personKeys.checkedAccessFor(person, choice);
    const unasked = access.permissions.filter((permission) => !scope.includes(permission));
    if (unasked.length > 0) {
      throw new ValidationError(
        `this app did not ask for ${unasked.join(', ')} (it asked for ${scope.join(', ')}): an app may be given only the permissions it asked for`,
        'permissions',
      );
    }
    return { channel_access_mode: access.channelAccessMode, allowed_addresses: access.allowedAddresses, permissions: access.permissions };
  }

  /** The person denied: the client hears access_denied. */
  deny(request: AuthorizationRequest): string {
    return this.responseUrl(request.redirectUri, { error: 'access_denied', error_description: 'the person denied the request', state: request.state });
  }

  /** An authorization response: its parameters, `state` as given, and `iss` (RFC 9207). */
  private responseUrl(redirectUri: string, params: Record<string, string | undefined>): string {
    const url = new URL(redirectUri);
    for (const [name, value] of Object.entries({ ...params, iss: this.issuer })) if (value !== undefined) url.searchParams.set(name, value);
    return url.href;
  }

  // ---- grants: the person's Connected apps, the operators' admin routes ----

  /** The person's grants, newest first (Settings → Connected apps). */
  async listGrants(userId: string): Promise<GrantView[]> {
    return (await this.repository.grantsOfUser(userId)).map(toGrantView);
  }

  /** One of the person's grants; another person's, a revoked one or none is not found (field grantId), exactly alike. */
  async grantOf(userId: string, grantId: string): Promise<GrantView> {
    const [row] = isUuid(grantId) ? await this.repository.grantsOfUser(userId, grantId) : [];
    if (!row) throw NotFoundError.of('oauth grant', grantId, 'grantId');
    return toGrantView(row);
  }

  /**
   * Changes what one of the person's grants may reach and do (Settings → Connected apps), as an
   * API key's owner changes the key's: the channel access and permissions by the rules of consent
   * (grantAccess: the person's own lines, and no permission the app did not ask for when it was
   * connected). `permissions` left out: they stay. Its access tokens read the grant on every
   * request, so the app's next request sees the change, and its listening streams are told now
   * (CredentialChanges). Another person's grant, a revoked one or none is not found (field grantId),
   * exactly alike, before anything of the choice is looked at.
   */
  async updateGrantAccess(person: PrincipalRef, grantId: string, choice: { channelAccess: PersonChannelAccess; permissions?: KeyPermission[] }): Promise<void> {
    const grant = await this.grantOf(person.userId, grantId);
    const access = await this.grantAccess(
      person,
      { channelAccess: choice.channelAccess, permissions: choice.permissions ?? grant.permissions },
      grant.requestedScopes,
    );
    if (!(await this.repository.updateGrantAccessOf(person.userId, grant.id, access))) throw NotFoundError.of('oauth grant', grantId, 'grantId');
    this.changes.changed(grant.id);
  }

  /** A user's grants for the operators: a user that does not exist is not found (field userId). */
  async listGrantsOfUser(userId: string): Promise<GrantView[]> {
    await this.accounts.getUser(userId);
    return this.listGrants(userId);
  }

  /**
   * Revokes one of the person's grants: its codes and tokens go with it, so the next request with
   * its access token is 401 and its refresh token invalid_grant. Another person's grant, or none,
   * is not found (field grantId), exactly alike.
   */
  async revokeGrant(userId: string, grantId: string): Promise<void> {
    if (!isUuid(grantId) || !(await this.repository.deleteGrantOf(userId, grantId))) throw NotFoundError.of('oauth grant', grantId, 'grantId');
    this.changes.changed(grantId);
  }

  /** Revokes any grant (the operators); unknown is not found (field grantId). */
  async revokeAnyGrant(grantId: string): Promise<void> {
    if (!isUuid(grantId) || !(await this.repository.deleteGrantOf(null, grantId))) throw NotFoundError.of('oauth grant', grantId, 'grantId');
    this.changes.changed(grantId);
  }

  /** Deletes registrations older than `maxAgeMs` that never got a grant (OAuthClientsRetention); returns how many. */
  deleteUnusedClients(maxAgeMs: number): Promise<number> {
    return this.repository.deleteUnusedClients(new Date(Date.now() - maxAgeMs));
  }

  // ---- the token endpoint (called by the SDK's handler) ----

  authorize(): Promise<void> {
    throw new Error('the authorization endpoint is the consent page (web/consent/consent.controller.tsx)');
  }

  /** The code's PKCE challenge; a code used before revokes what it issued (RFC 6749 §4.1.2). */
  async challengeForAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<string> {
    const row = await this.repository.findCode(sha256(code));
    if (!row || row.client_id !== client.client_id) throw new InvalidGrantError('the authorization code is unknown');
    if (row.used) {
      await this.revokeWholeGrant(row.grant_id);
      throw new InvalidGrantError('the authorization code was already used: what it issued is revoked');
    }
    if (row.expired) throw new InvalidGrantError('the authorization code expired');
    return row.code_challenge;
  }

  async exchangeAuthorizationCode(
    client: OAuthClientInformationFull,
    code: string,
    _verifier?: string,
    redirectUri?: string,
    resource?: URL,
  ): Promise<OAuthTokens> {
    const hash = sha256(code);
    const row = await this.repository.findCode(hash);
    if (!row || row.client_id !== client.client_id) throw new InvalidGrantError('the authorization code is unknown');
    if (redirectUri !== undefined && redirectUri !== row.redirect_uri) throw new InvalidGrantError('redirect_uri differs from the authorization request');
    const grant = await this.repository.findGrant(row.grant_id);
    if (!grant) throw new InvalidGrantError('the authorization code is unknown');
    if (resource !== undefined && resource.href !== grant.resource && resource.href !== new URL(grant.resource).href) {
      throw new InvalidTargetError(`resource must be ${grant.resource}`);
    }
    if (!(await this.repository.useCode(hash))) {
      await this.revokeWholeGrant(row.grant_id);
      throw new InvalidGrantError('the authorization code was already used or expired');
    }
    return this.issueTokens(grant.id, grant.permissions);
  }

  /** Rotates: the refresh token is spent, a new pair issued; one presented twice revokes its whole grant. */
  async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string, _scopes?: string[], resource?: URL): Promise<OAuthTokens> {
    const hash = sha256(refreshToken);
    const row = await this.repository.findToken(hash);
    if (!row || row.kind !== 'refresh' || row.client_id !== client.client_id) throw new InvalidGrantError('the refresh token is unknown');
    const grant = await this.repository.findGrant(row.grant_id);
    if (!grant) throw new InvalidGrantError('the refresh token is unknown');
    if (resource !== undefined && resource.href !== new URL(grant.resource).href) throw new InvalidTargetError(`resource must be ${grant.resource}`);
    // The old refresh token is spent, the grant's access token ended and the new pair stored by one
    // statement (grants have one live access token: their running-call slots are the grant's).
    const { tokens, pair } = newTokens(grant.permissions);
    if (!(await this.repository.rotateTokens(hash, grant.id, pair))) {
      if (row.used) await this.revokeWholeGrant(row.grant_id);
      throw new InvalidGrantError(row.used ? 'the refresh token was already used: its grant is revoked' : 'the refresh token expired');
    }
    this.changes.changed(grant.id); // the grant's previous access token has ended
    return tokens;
  }

  private async issueTokens(grantId: string, permissions: KeyPermission[]): Promise<OAuthTokens> {
    const { tokens, pair } = newTokens(permissions);
    await this.repository.insertTokens(grantId, pair);
    return tokens;
  }

  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const rows = ACCESS_TOKEN.test(token) ? await this.credentials.rows(sha256(token)) : [];
    if (rows.length === 0 || rows[0].resource !== this.resource) throw new InvalidGrantError('the access token is unknown');
    return { token, clientId: '', scopes: rows[0].permissions, resource: new URL(this.resource) };
  }

  /** RFC 7009: a refresh token revokes its grant; an access token itself. Unknown tokens, or another client's, change nothing. */
  async revokeToken(client: OAuthClientInformationFull, request: OAuthTokenRevocationRequest): Promise<void> {
    const hash = sha256(request.token);
    const row = await this.repository.findToken(hash);
    if (!row || row.client_id !== client.client_id) return;
    if (row.kind === 'refresh') await this.repository.deleteGrant(row.grant_id);
    else await this.repository.deleteToken(hash);
    this.changes.changed(row.grant_id);
  }

  /** Deletes a grant with its codes and tokens (a code or refresh token presented twice), and says so to what holds its token. */
  private async revokeWholeGrant(grantId: string): Promise<void> {
    await this.repository.deleteGrant(grantId);
    this.changes.changed(grantId);
  }

  // ---- the MCP endpoint (GrantCallers, for the AuthGuard) ----

  async resolve(token: string, request: Request): Promise<KeyPrincipal | null> {
    if (!ACCESS_TOKEN.test(token)) return null;
    const resource = `${this.issuer}${request.path}`;
    const rows = await this.credentials.rows(sha256(token));
    if (rows.length === 0 || rows[0].resource !== resource) return null;
    return this.credentials.principal(rows);
  }

  /** Lets last-use writes in flight finish before the database pool closes. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.credentials.settle();
  }

  isActive(grantId: string): Promise<boolean> {
    return this.repository.grantExists(grantId);
  }

  /** On the MCP endpoint: its Protected Resource Metadata, and every scope (a key's permissions; the person picks at consent). */
  challengeFor(request: Request): ResourceChallenge | undefined {
    if (request.path !== MCP_RESOURCE_PATH) return undefined;
    return { resourceMetadata: `${this.issuer}/.well-known/oauth-protected-resource${MCP_RESOURCE_PATH}`, scope: SCOPES.join(' ') };
  }
}

/** How a client's identity was established: a client_id that is a document's URL is a metadata-document client. */
function registrationOf(client: Pick<ClientRow, 'client_id'>): ClientRegistration {
  return isDocumentClientId(client.client_id) ? 'metadata-document' : 'self-registered';
}

function toGrantView(row: GrantListRow): GrantView {
  return {
    id: row.id,
    userId: row.user_id,
    client: { id: row.client_id, name: row.client_name, redirectHost: new URL(row.redirect_uri).host, registration: registrationOf(row) },
    channelAccess: accessView(
      row.channel_access_mode,
      row.lines.map(({ id, address }) => ({ id, address })),
    ),
    permissions: row.permissions,
    requestedScopes: row.requested_scopes,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  };
}

/** A new access and refresh token: what the client is given, and what is stored (hashes only). */
function newTokens(permissions: KeyPermission[]): { tokens: OAuthTokens; pair: TokenPair } {
  const access = `csa_${randomBytes(24).toString('hex')}`;
  const refresh = `csr_${randomBytes(24).toString('hex')}`;
  const now = Date.now();
  return {
    tokens: { access_token: access, token_type: 'Bearer', expires_in: ACCESS_TOKEN_SECONDS, refresh_token: refresh, scope: permissions.join(' ') },
    pair: {
      accessHash: sha256(access),
      accessExpiresAt: new Date(now + ACCESS_TOKEN_SECONDS * 1000),
      refreshHash: sha256(refresh),
      refreshExpiresAt: new Date(now + REFRESH_TOKEN_SECONDS * 1000),
    },
  };
}

function toClientInformation(row: ClientRow): OAuthClientInformationFull {
  return {
    ...(row.metadata as object),
    client_id: row.client_id,
    client_id_issued_at: Math.floor(row.created_at.getTime() / 1000),
    redirect_uris: row.redirect_uris,
  } as OAuthClientInformationFull;
}

import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ChannelAccessMode } from '../identity/account.types';
import { AllowlistLine, allowlistLinesSql, CredentialRow, credentialRowsSql } from '../identity/credential-rows.sql';
import { KeyPermission } from '../identity/key-permissions';
import { stampLastUseSql } from '../identity/last-use-stamps';
import { inValues, queryNamed } from '../database/sql';

export interface ClientRow {
  client_id: string;
  client_name: string | null;
  redirect_uris: string[];
  metadata: Record<string, unknown>;
  created_at: Date;
}

/** A grant as its person and the operators see it: its client, where it returns, and its lines by address (with the org's live line at each, or null). */
export interface GrantListRow {
  id: string;
  user_id: string;
  client_id: string;
  client_name: string | null;
  redirect_uri: string;
  channel_access_mode: ChannelAccessMode;
  lines: AllowlistLine[];
  permissions: KeyPermission[];
  requested_scopes: KeyPermission[];
  created_at: Date;
  last_used_at: Date | null;
}

/** A live access token's caller row (one per line it reaches): the token it was found by, its grant's resource and last use. */
export interface TokenCallerRow extends CredentialRow {
  token_hash: string;
  resource: string;
}

export interface GrantRow {
  id: string;
  user_id: string;
  client_id: string;
  resource: string;
  channel_access_mode: ChannelAccessMode;
  allowed_addresses: string[];
  permissions: KeyPermission[];
  /** The scope the client asked for: `permissions` never hold more. */
  requested_scopes: KeyPermission[];
}

/** What a person may change of a grant: its channel access and permissions, as the columns hold them. */
export type GrantAccess = Pick<GrantRow, 'channel_access_mode' | 'allowed_addresses' | 'permissions'>;

/** OAuth clients, grants, codes and tokens (docs/mcp.md "Connecting Claude, ChatGPT and other OAuth clients"); secrets only as SHA-256 hashes. */
/** A new access and refresh token of a grant, as stored: their hashes and when they end. */
export interface TokenPair {
  accessHash: string;
  accessExpiresAt: Date;
  refreshHash: string;
  refreshExpiresAt: Date;
}

@Injectable()
export class OAuthRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async insertClient(client: { clientId: string; clientName: string | null; redirectUris: string[]; metadata: object }): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `INSERT INTO oauth_clients (client_id, client_name, redirect_uris, metadata) VALUES (:clientId, :clientName, :redirectUris::text[], :metadata::jsonb)`,
      { ...client, metadata: JSON.stringify(client.metadata) },
    );
  }

  /** The row of a metadata document client (client_id its URL): inserted at its first grant, refreshed at each. */
  async upsertDocumentClient(client: { clientId: string; clientName: string | null; redirectUris: string[]; metadata: object }): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `INSERT INTO oauth_clients (client_id, client_name, redirect_uris, metadata) VALUES (:clientId, :clientName, :redirectUris::text[], :metadata::jsonb)
       ON CONFLICT (client_id) DO UPDATE SET client_name = EXCLUDED.client_name, redirect_uris = EXCLUDED.redirect_uris, metadata = EXCLUDED.metadata`,
      { ...client, metadata: JSON.stringify(client.metadata) },
    );
  }

  async findClient(clientId: string): Promise<ClientRow | undefined> {
    const rows = await queryNamed<ClientRow[]>(this.dataSource.manager, `SELECT * FROM oauth_clients WHERE client_id = :clientId`, { clientId });
    return rows[0];
  }

  /** Inserts the grant, and marks its client used (a registration with a grant never expires). */
  async insertGrant(grant: Omit<GrantRow, never>): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `WITH used AS (UPDATE oauth_clients SET last_used_at = now() WHERE client_id = :client_id)
       INSERT INTO oauth_grants (id, user_id, client_id, resource, channel_access_mode, allowed_addresses, permissions, requested_scopes)
       VALUES (:id, :user_id, :client_id, :resource, :channel_access_mode, :allowed_addresses::text[], :permissions::text[], :requested_scopes::text[])`,
      { ...grant },
    );
  }

  async findGrant(grantId: string): Promise<GrantRow | undefined> {
    const rows = await queryNamed<GrantRow[]>(this.dataSource.manager, `SELECT * FROM oauth_grants WHERE id = :grantId`, { grantId });
    return rows[0];
  }

  /**
   * The user's grants, newest first, or only `grantId` when given (none when it is another's).
   * Where the client returns: the redirect URI of the grant's authorization code (a code lives as
   * long as its grant), else the client's first one.
   */
  grantsOfUser(userId: string, grantId: string | null = null): Promise<GrantListRow[]> {
    return queryNamed(
      this.dataSource.manager,
      `SELECT g.id, g.user_id, g.client_id, c.client_name, g.channel_access_mode, g.permissions, g.requested_scopes, g.created_at, g.last_used_at,
              COALESCE((SELECT k.redirect_uri FROM oauth_codes k WHERE k.grant_id = g.id ORDER BY k.expires_at LIMIT 1), c.redirect_uris[1]) AS redirect_uri,
              ${allowlistLinesSql('g', 'u.org_id')}
         FROM oauth_grants g
         JOIN oauth_clients c ON c.client_id = g.client_id
         JOIN users u ON u.id = g.user_id
        WHERE g.user_id = :userId AND (:grantId::uuid IS NULL OR g.id = :grantId::uuid)
        ORDER BY g.created_at DESC, g.id`,
      { userId, grantId },
    );
  }

  /**
   * Sets the channel access and permissions of `userId`'s grant `grantId`: true when it did (false
   * for a grant revoked meanwhile, or another's). Its access tokens read the grant on every request
   * (callerRows), so the next one sees the change.
   */
  async updateGrantAccessOf(userId: string, grantId: string, access: GrantAccess): Promise<boolean> {
    const [, count] = await this.dataSource.transaction((manager) =>
      queryNamed<[unknown[], number]>(
        manager,
        `UPDATE oauth_grants SET channel_access_mode = :channel_access_mode, allowed_addresses = :allowed_addresses::text[], permissions = :permissions::text[]
        WHERE id = :grantId AND user_id = :userId`,
        { ...access, grantId, userId },
      ),
    );
    return count > 0;
  }

  /** Deletes the grant (and its codes and tokens) when it is `userId`'s, or anyone's when `userId` is null: true when it did. */
  async deleteGrantOf(userId: string | null, grantId: string): Promise<boolean> {
    const [, count] = await this.dataSource.transaction((manager) =>
      queryNamed<[unknown[], number]>(manager, `DELETE FROM oauth_grants WHERE id = :grantId AND (:userId::uuid IS NULL OR user_id = :userId::uuid)`, {
        grantId,
        userId,
      }),
    );
    return count > 0;
  }

  /**
   * Registrations never used: clients registered before `before` that never got a grant (a grant
   * marks its client used), deleted. Returns how many.
   */
  async deleteUnusedClients(before: Date): Promise<number> {
    const [, count] = await queryNamed<[unknown[], number]>(
      this.dataSource.manager,
      `DELETE FROM oauth_clients c
        WHERE c.created_at < :before AND c.last_used_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.client_id)`,
      { before },
    );
    return count;
  }

  async grantExists(grantId: string): Promise<boolean> {
    const rows = await queryNamed<unknown[]>(this.dataSource.manager, `SELECT 1 FROM oauth_grants WHERE id = :grantId`, { grantId });
    return rows.length > 0;
  }

  /** Deletes the grant, and with it its codes and tokens. */
  async deleteGrant(grantId: string): Promise<void> {
    await queryNamed(this.dataSource.manager, `DELETE FROM oauth_grants WHERE id = :grantId`, { grantId });
  }

  async insertCode(code: { codeHash: string; grantId: string; redirectUri: string; codeChallenge: string; expiresAt: Date }): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, expires_at) VALUES (:codeHash, :grantId, :redirectUri, :codeChallenge, :expiresAt)`,
      code,
    );
  }

  async findCode(
    codeHash: string,
  ): Promise<{ grant_id: string; client_id: string; redirect_uri: string; code_challenge: string; expired: boolean; used: boolean } | undefined> {
    const rows = await queryNamed<
      Array<{ grant_id: string; client_id: string; redirect_uri: string; code_challenge: string; expired: boolean; used: boolean }>
    >(
      this.dataSource.manager,
      `SELECT c.grant_id, g.client_id, c.redirect_uri, c.code_challenge, c.expires_at <= now() AS expired, c.used_at IS NOT NULL AS used
         FROM oauth_codes c JOIN oauth_grants g ON g.id = c.grant_id WHERE c.code_hash = :codeHash`,
      { codeHash },
    );
    return rows[0];
  }

  /** Marks the code used, once: true for the one request that did. */
  useCode(codeHash: string): Promise<boolean> {
    return this.spend(`UPDATE oauth_codes SET used_at = now() WHERE code_hash = :hash AND used_at IS NULL AND expires_at > now()`, codeHash);
  }

  /** Stores a new pair of the grant's tokens (their hashes), in one statement. */
  async insertTokens(grantId: string, pair: TokenPair): Promise<void> {
    await queryNamed(
      this.dataSource.manager,
      `INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at)
       VALUES (:accessHash, :grantId, 'access', :accessExpiresAt), (:refreshHash, :grantId, 'refresh', :refreshExpiresAt)`,
      { grantId, ...pair },
    );
  }

  /**
   * Rotates, in one statement (all of it or none): spends the live refresh token `spentHash` (once:
   * false for any request but the one that did), ends the grant's access tokens and stores the new
   * pair. A failure leaves the old refresh token unspent, so the client may try again.
   */
  async rotateTokens(spentHash: string, grantId: string, pair: TokenPair): Promise<boolean> {
    const rows = await queryNamed<Array<{ issued: number }>>(
      this.dataSource.manager,
      `WITH spent AS (
             UPDATE oauth_tokens SET used_at = now()
              WHERE token_hash = :spentHash AND grant_id = :grantId AND kind = 'refresh' AND used_at IS NULL AND expires_at > now()
             RETURNING grant_id),
           ended AS (DELETE FROM oauth_tokens WHERE grant_id IN (SELECT grant_id FROM spent) AND kind = 'access'),
           issued AS (
             INSERT INTO oauth_tokens (token_hash, grant_id, kind, expires_at)
             SELECT v.token_hash, spent.grant_id, v.kind, v.expires_at
               FROM spent CROSS JOIN (VALUES (:accessHash, 'access', :accessExpiresAt::timestamptz), (:refreshHash, 'refresh', :refreshExpiresAt::timestamptz))
                    AS v(token_hash, kind, expires_at)
             RETURNING 1)
       SELECT count(*)::int AS issued FROM issued`,
      { spentHash, grantId, ...pair },
    );
    return rows[0].issued > 0;
  }

  async findToken(
    tokenHash: string,
  ): Promise<{ grant_id: string; client_id: string; kind: 'access' | 'refresh'; used: boolean; expired: boolean } | undefined> {
    const rows = await queryNamed<Array<{ grant_id: string; client_id: string; kind: 'access' | 'refresh'; used: boolean; expired: boolean }>>(
      this.dataSource.manager,
      `SELECT t.grant_id, g.client_id, t.kind, t.used_at IS NOT NULL AS used, t.expires_at <= now() AS expired
         FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = :tokenHash`,
      { tokenHash },
    );
    return rows[0];
  }

  /** Runs a conditional UPDATE of one row by its hash: true when it changed the row (the one request that spent it). */
  private async spend(sql: string, hash: string): Promise<boolean> {
    const [, count] = await queryNamed<[unknown[], number]>(this.dataSource.manager, sql, { hash });
    return count > 0;
  }

  async deleteToken(tokenHash: string): Promise<void> {
    await queryNamed(this.dataSource.manager, `DELETE FROM oauth_tokens WHERE token_hash = :tokenHash`, { tokenHash });
  }

  /**
   * The grants of the live access tokens with these hashes, each with its resource, its person, org
   * and the person's live lines narrowed by the grant's channel access (credentialRowsSql, as
   * ApiKeysRepository.callerRows): oldest line first, no row for an unknown, expired or refresh token.
   */
  callerRows(tokenHashes: string[]): Promise<TokenCallerRow[]> {
    const hashes = inValues('t.token_hash', 'tokenHashes', tokenHashes, 'text');
    return queryNamed(
      this.dataSource.manager,
      credentialRowsSql({
        columns: 't.token_hash, g.resource',
        from: 'oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id',
        credential: 'g',
        where: `${hashes.sql} AND t.kind = 'access' AND t.expires_at > now()`,
        groupBy: 't.token_hash',
      }),
      hashes.parameters,
    );
  }

  /**
   * Stamps the grant's last use with `now`, unless it was stamped less than a minute before `now`
   * (as ApiKeysRepository.touchLastUsed): of a burst, one write a minute reaches the row.
   */
  async touchGrant(grantId: string, now: Date): Promise<boolean> {
    const [, count] = await queryNamed<[unknown[], number]>(this.dataSource.manager, stampLastUseSql('oauth_grants', 'id'), { id: grantId, now });
    return count > 0;
  }
}

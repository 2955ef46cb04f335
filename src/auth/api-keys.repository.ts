import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ChannelAccessMode } from '../identity/account.types';
import { inValues, queryNamed } from '../database/sql';
import { ApiKey } from './api-key.entity';
import { AllowlistLine, allowlistLinesSql, CredentialRow, credentialRowsSql } from '../identity/credential-rows.sql';
import { KeyPermission } from '../identity/key-permissions';
import { stampLastUseSql } from '../identity/last-use-stamps';
import { PrincipalRef } from '../identity/principal';
import { UserRole } from '../identity/roles';

/** One row per line the key reaches (one row with null line columns when it reaches none). */
export interface KeyCallerRow extends CredentialRow {
  key_hash: string;
}

/** A key as a person sees it in Settings → API keys: no hash, and its allowlist matched to the org's live lines. */
export interface PersonKeyRow {
  id: string;
  name: string;
  key_last4: string;
  channel_access_mode: ChannelAccessMode;
  permissions: KeyPermission[];
  /** The allowlist in its order (allowlistLinesSql). */
  lines: AllowlistLine[];
  created_at: Date;
  last_used_at: Date | null;
  owner_id: string;
  owner_email: string;
  mine: boolean;
}

/**
 * The keys a person sees: `p` is the person's own row, read live (a person moved to another org or
 * deleted sees nothing; a demoted admin sees only their own keys at once). Own keys, plus, for an
 * OWNER or ADMIN, every key of users of the same org.
 */
const KEYS_VISIBLE_TO_PERSON = `
  FROM users p
  JOIN users o ON o.org_id = p.org_id AND (o.id = p.id OR p.role IN ('OWNER', 'ADMIN'))
  JOIN api_keys k ON k.user_id = o.id
 WHERE p.id = :userId AND p.org_id = :orgId`;

const PERSON_KEY_COLUMNS = `
SELECT k.id, k.name, k.key_last4, k.channel_access_mode, k.permissions, k.created_at, k.last_used_at,
       o.id AS owner_id, o.email AS owner_email, (k.user_id = p.id) AS mine,
       ${allowlistLinesSql('k', 'p.org_id')}`;

/**
 * SQL of API keys. The administrator manages keys by user or key id; a person (Settings → API keys)
 * only through the methods taking the PrincipalRef, which carry the org and owner conditions. Resolving a key
 * runs on every authenticated request, so it is one indexed statement, never cached: a revoked
 * key must fail on its very next request.
 */
@Injectable()
export class ApiKeysRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  private get keys() {
    return this.dataSource.getRepository(ApiKey);
  }

  save(key: Partial<ApiKey>): Promise<ApiKey> {
    return this.keys.save(this.keys.create(key));
  }

  listForUser(userId: string): Promise<ApiKey[]> {
    return this.keys.find({ where: { userId }, order: { createdAt: 'ASC' } });
  }

  findById(keyId: string): Promise<ApiKey | null> {
    return this.keys.findOneBy({ id: keyId });
  }

  /** Deletes the key; false when there was none. */
  /** In a transaction of its own, as every revocation: its commit carries the call's audit row (src/audit). */
  async delete(keyId: string): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => Boolean((await manager.getRepository(ApiKey).delete({ id: keyId })).affected));
  }

  async exists(keyId: string): Promise<boolean> {
    const rows = await queryNamed<unknown[]>(this.dataSource.manager, 'SELECT 1 FROM api_keys WHERE id = :keyId', { keyId });
    return rows.length > 0;
  }

  /** The person's role if the person is still a user of that org, else null. */
  async liveRole(person: PrincipalRef): Promise<UserRole | null> {
    const rows = await queryNamed<Array<{ role: UserRole }>>(this.dataSource.manager, 'SELECT role FROM users WHERE id = :userId AND org_id = :orgId', {
      userId: person.userId,
      orgId: person.orgId,
    });
    return rows[0]?.role ?? null;
  }

  /** The keys the person sees (KEYS_VISIBLE_TO_PERSON): their own first, then by creation. */
  listVisibleTo(person: PrincipalRef): Promise<PersonKeyRow[]> {
    return queryNamed(this.dataSource.manager, `${PERSON_KEY_COLUMNS} ${KEYS_VISIBLE_TO_PERSON} ORDER BY mine DESC, k.created_at, k.id`, {
      userId: person.userId,
      orgId: person.orgId,
    });
  }

  /** One key, if the person sees it. `keyId` must be a UUID. */
  async findVisibleTo(person: PrincipalRef, keyId: string): Promise<PersonKeyRow | null> {
    const rows = await queryNamed<PersonKeyRow[]>(this.dataSource.manager, `${PERSON_KEY_COLUMNS} ${KEYS_VISIBLE_TO_PERSON} AND k.id = :keyId`, {
      userId: person.userId,
      orgId: person.orgId,
      keyId,
    });
    return rows[0] ?? null;
  }

  /** Changes the channel access, and the permissions when given, of one of the person's own keys; false when the person has no such key. */
  async updateOwnAccess(
    person: PrincipalRef,
    keyId: string,
    access: Pick<ApiKey, 'channelAccessMode' | 'allowedAddresses'> & { permissions?: KeyPermission[] },
  ): Promise<boolean> {
    const [, count] = await this.dataSource.transaction((manager) =>
      queryNamed<[unknown[], number]>(
        manager,
        `UPDATE api_keys k SET channel_access_mode = :mode, allowed_addresses = :addresses::text[],
              permissions = COALESCE(:permissions::text[], k.permissions), updated_at = now()
         FROM users p
        WHERE k.id = :keyId AND k.user_id = p.id AND p.id = :userId AND p.org_id = :orgId`,
        {
          keyId,
          userId: person.userId,
          orgId: person.orgId,
          mode: access.channelAccessMode,
          addresses: access.allowedAddresses,
          permissions: access.permissions ?? null,
        },
      ),
    );
    return count > 0;
  }

  /** Deletes a key the person sees (own, or any of the org's for an OWNER or ADMIN); false when there is none. */
  async deleteVisibleTo(person: PrincipalRef, keyId: string): Promise<boolean> {
    // In a transaction of its own: its commit carries the call's audit row (src/audit).
    const [, count] = await this.dataSource.transaction((manager) =>
      queryNamed<[unknown[], number]>(
        manager,
        `DELETE FROM api_keys k
        USING users p, users o
        WHERE k.id = :keyId AND o.id = k.user_id AND p.id = :userId AND p.org_id = :orgId
          AND o.org_id = p.org_id AND (o.id = p.id OR p.role IN ('OWNER', 'ADMIN'))`,
        { keyId, userId: person.userId, orgId: person.orgId },
      ),
    );
    return count > 0;
  }

  /**
   * Stamps the key's last use with `now`, unless it was stamped less than a minute before `now`:
   * of a burst of requests, one write a minute reaches the row, whatever the number of replicas.
   */
  async touchLastUsed(keyId: string, now: Date): Promise<boolean> {
    const [, count] = await queryNamed<[unknown[], number]>(this.dataSource.manager, stampLastUseSql('api_keys', 'id'), { id: keyId, now });
    return count > 0;
  }

  /**
   * The keys with these hashes, each with its owner and org, and the owner's live lines narrowed
   * by the key's allowlist (credentialRowsSql, as an OAuth grant's), oldest line first; no row for an unknown hash.
   */
  callerRows(keyHashes: string[]): Promise<KeyCallerRow[]> {
    const hashes = inValues('k.key_hash', 'keyHashes', keyHashes, 'text');
    return queryNamed(
      this.dataSource.manager,
      credentialRowsSql({ columns: 'k.key_hash', from: 'api_keys k', credential: 'k', where: hashes.sql, groupBy: 'k.key_hash' }),
      hashes.parameters,
    );
  }
}

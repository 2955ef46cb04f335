import { createHash, randomBytes } from 'node:crypto';
import { BeforeApplicationShutdown, Injectable, Logger, Optional } from '@nestjs/common';
import { AccountsService } from '../accounts/accounts.service';
import { normalizeAddress } from '../identity/account.types';
import { Clock } from '../common/clock';
import { NotFoundError } from '../common/errors';
import { MicroBatcher, rowsPerKey } from '../common/micro-batcher';
import { ApiKey } from './api-key.entity';
import { ApiKeysRepository, CallerRow, KeyCallerRow } from './api-keys.repository';
import { isGrantId, KeyPrincipal } from '../identity/principal';
import { CredentialChanges } from './credential-changes';
import { GrantCallers } from '../identity/grant-callers';
import { LastUseStamps } from './last-use-stamps';
import { ALL_KEY_PERMISSIONS, canonicalPermissions, KeyPermission } from '../identity/key-permissions';

/** `csk_` followed by 48 lowercase hex characters (spec: API key format). */
export const API_KEY_PATTERN = /^csk_[0-9a-f]{48}$/;

export type ChannelAccess = { mode: 'ALL' } | { mode: 'LINES'; lines: string[] };

export interface ApiKeyView {
  id: string;
  userId: string;
  name: string;
  keyLast4: string;
  channelAccess: ChannelAccess;
  /** read, send, webhooks (identity/key-permissions.ts), in that order. */
  permissions: KeyPermission[];
  createdAt: Date;
  updatedAt: Date;
}

export function hashApiKey(raw: string): string {
  return createHash('sha256').update(raw, 'utf8').digest('hex');
}

export function generateApiKey(): string {
  return `csk_${randomBytes(24).toString('hex')}`;
}

/** API keys: created with a secret shown once, stored as a SHA-256 hash, revoked by deletion. */
@Injectable()
export class ApiKeysService implements BeforeApplicationShutdown {
  private readonly lastUse: LastUseStamps;
  /**
   * Key lookups of concurrent requests share one query (each still reads the key after its
   * request arrived, so a revoked key is refused at once).
   */
  private readonly lookups = new MicroBatcher<string, KeyCallerRow[]>((hashes) => this.lookupBatch(hashes));

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly accounts: AccountsService,
    private readonly changes: CredentialChanges,
    clock: Clock,
    /** OAuth grants act as keys on the MCP endpoint (oauth/): isActive answers for them too. */
    @Optional() private readonly grants?: GrantCallers,
  ) {
    this.lastUse = new LastUseStamps((keyId, now) => this.keys.touchLastUsed(keyId, now), clock, new Logger(ApiKeysService.name), 'API key');
  }

  /** `permissions` left out: all of them, so the key may do whatever its user may. */
  async create(userId: string, input: { name: string; channelAccess: ChannelAccess; permissions?: KeyPermission[] }): Promise<ApiKeyView & { key: string }> {
    await this.accounts.getUser(userId);
    const key = generateApiKey();
    const saved = await this.keys.save({
      userId,
      name: input.name,
      keyHash: hashApiKey(key),
      keyLast4: key.slice(-4),
      ...accessColumns(input.channelAccess),
      permissions: canonicalPermissions(input.permissions ?? ALL_KEY_PERMISSIONS),
    });
    return { ...toView(saved), key };
  }

  async listForUser(userId: string): Promise<ApiKeyView[]> {
    await this.accounts.getUser(userId);
    const rows = await this.keys.listForUser(userId);
    return rows.map(toView);
  }

  /** Changes what the key may reach or do (what is left out stays); the next request already sees it. The secret stays. */
  async update(keyId: string, change: { channelAccess?: ChannelAccess; permissions?: KeyPermission[] }): Promise<ApiKeyView> {
    const key = await this.keys.findById(keyId);
    if (!key) throw NotFoundError.of('api key', keyId, 'keyId');
    if (change.channelAccess) Object.assign(key, accessColumns(change.channelAccess));
    if (change.permissions) key.permissions = canonicalPermissions(change.permissions);
    const saved = toView(await this.keys.save(key));
    this.changes.changed(keyId);
    return saved;
  }

  /** Revoking deletes the key at once; the next request with it is refused. */
  async revoke(keyId: string): Promise<void> {
    if (!(await this.keys.delete(keyId))) throw NotFoundError.of('api key', keyId, 'keyId');
    this.changes.changed(keyId);
  }

  /**
   * False once the key is revoked (deleted). One primary-key lookup: a long request (a batch) asks
   * this between its messages, so a revocation stops it, not only the next request.
   */
  async isActive(keyId: string): Promise<boolean> {
    if (isGrantId(keyId)) return (await this.grants?.isActive(keyId)) ?? false;
    return this.keys.exists(keyId);
  }

  /**
   * Resolves a raw key to its caller, or null when the key is malformed, unknown or revoked.
   * One query: the key, its owner and org, and the owner's live lines narrowed by the allowlist.
   */
  async resolve(raw: string): Promise<KeyPrincipal | null> {
    if (!API_KEY_PATTERN.test(raw)) return null;
    const rows = await this.lookups.submit(hashApiKey(raw));
    if (rows.length === 0) return null;
    this.lastUse.note(rows[0].key_id, rows[0].last_used_at);
    return callerOfRows(rows);
  }

  private async lookupBatch(hashes: string[]): Promise<KeyCallerRow[][]> {
    return rowsPerKey(hashes, await this.keys.callerRows([...new Set(hashes)]), (row) => row.key_hash);
  }

  /** Lets last-use writes in flight finish before the database pool closes. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.lastUse.settle();
  }
}

/** The caller of a key's (or an OAuth grant's, oauth/) rows: one per line it reaches, the first holding the key, its user and org. */
export function callerOfRows(rows: CallerRow[]): KeyPrincipal {
  const first = rows[0];
  return {
    keyId: first.key_id,
    userId: first.user_id,
    orgId: first.org_id,
    orgTier: first.tier,
    role: first.role,
    channelAccess: first.mode,
    permissions: first.permissions,
    lines: rows.filter((r) => r.line_id !== null).map((r) => ({ id: r.line_id!, type: r.line_type!, address: r.line_address! })),
  };
}

function accessColumns(access: ChannelAccess): Pick<ApiKey, 'channelAccessMode' | 'allowedAddresses'> {
  return access.mode === 'ALL'
    ? { channelAccessMode: 'ALL', allowedAddresses: [] }
    : { channelAccessMode: 'LINES', allowedAddresses: [...new Set(access.lines.map(normalizeAddress))] };
}

function toView(key: ApiKey): ApiKeyView {
  return {
    id: key.id,
    userId: key.userId,
    name: key.name,
    keyLast4: key.keyLast4,
    channelAccess: key.channelAccessMode === 'ALL' ? { mode: 'ALL' } : { mode: 'LINES', lines: key.allowedAddresses },
    permissions: key.permissions,
    createdAt: key.createdAt,
    updatedAt: key.updatedAt,
  };
}

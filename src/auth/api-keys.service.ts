import { BeforeApplicationShutdown, Injectable, Logger, Optional } from '@nestjs/common';
import { AccountsService } from '../accounts/accounts.service';
import { Clock } from '../common/clock';
import { NotFoundError } from '../common/errors';
import { ApiKey } from './api-key.entity';
import { ApiKeysRepository, KeyCallerRow } from './api-keys.repository';
import { CredentialResolver } from '../identity/credential-resolver';
import { AccessView, accessColumnsOf, accessView, LineByAddress, LineSelection } from '../identity/line-selection';
import { isGrantId, KeyPrincipal } from '../identity/principal';
import { API_KEY_PATTERN, hashApiKey } from './key-management/api-key-secret';
import { CreateApiKey } from './key-management/create-api-key.usecase';
import { OPERATOR } from './key-management/key-manager';
import { RevokeApiKey } from './key-management/revoke-api-key.usecase';
import { UpdateApiKeyAccess } from './key-management/update-api-key-access.usecase';
import { GrantCallers } from '../identity/grant-callers';
import { ALL_KEY_PERMISSIONS, KeyPermission } from '../identity/key-permissions';

export interface ApiKeyView {
  id: string;
  userId: string;
  name: string;
  keyLast4: string;
  /** All the user's lines, or the allowlist's addresses (each may match no line yet). */
  channelAccess: AccessView<string>;
  /** read, send, webhooks (identity/key-permissions.ts), in that order. */
  permissions: KeyPermission[];
  createdAt: Date;
  updatedAt: Date;
}

/** API keys: created with a secret shown once, stored as a SHA-256 hash, revoked by deletion. */
@Injectable()
export class ApiKeysService implements BeforeApplicationShutdown {
  /** Keys resolve to their principal as OAuth grants do (identity/credential-resolver.ts). */
  private readonly credentials: CredentialResolver<KeyCallerRow>;

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly accounts: AccountsService,
    private readonly createKey: CreateApiKey,
    private readonly updateKey: UpdateApiKeyAccess,
    private readonly revokeKey: RevokeApiKey,
    clock: Clock,
    /** OAuth grants act as keys on the MCP endpoint (oauth/): isActive answers for them too. */
    @Optional() private readonly grants?: GrantCallers,
  ) {
    this.credentials = new CredentialResolver<KeyCallerRow>({
      rows: (hashes) => this.keys.callerRows(hashes),
      hashOf: (row) => row.key_hash,
      stamp: (keyId, now) => this.keys.touchLastUsed(keyId, now),
      clock,
      logger: new Logger(ApiKeysService.name),
      what: 'API key',
    });
  }

  /** `permissions` left out: all of them, so the key may do whatever its user may. Lines are named by address. */
  async create(
    userId: string,
    input: { name: string; channelAccess: LineSelection<LineByAddress>; permissions?: KeyPermission[] },
  ): Promise<ApiKeyView & { key: string }> {
    await this.accounts.getUser(userId);
    const { key, saved } = await this.createKey.execute(userId, {
      name: input.name,
      access: accessColumnsOf(input.channelAccess),
      permissions: input.permissions ?? ALL_KEY_PERMISSIONS,
    });
    return { ...toView(saved), key };
  }

  async listForUser(userId: string): Promise<ApiKeyView[]> {
    await this.accounts.getUser(userId);
    const rows = await this.keys.listForUser(userId);
    return rows.map(toView);
  }

  /** Changes what the key may reach or do (what is left out stays); the next request already sees it. The secret stays. */
  async update(keyId: string, change: { channelAccess?: LineSelection<LineByAddress>; permissions?: KeyPermission[] }): Promise<ApiKeyView> {
    await this.updateKey.execute(OPERATOR, keyId, {
      access: change.channelAccess && accessColumnsOf(change.channelAccess),
      permissions: change.permissions,
    });
    const key = await this.keys.findById(keyId);
    if (!key) throw NotFoundError.of('api key', keyId, 'keyId'); // revoked between the two statements
    return toView(key);
  }

  /** Revoking deletes the key at once; the next request with it is refused. */
  async revoke(keyId: string): Promise<void> {
    await this.revokeKey.execute(OPERATOR, keyId);
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
    const rows = await this.credentials.rows(hashApiKey(raw));
    return rows.length === 0 ? null : this.credentials.principal(rows);
  }

  /** Lets last-use writes in flight finish before the database pool closes. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.credentials.settle();
  }
}

function toView(key: ApiKey): ApiKeyView {
  return {
    id: key.id,
    userId: key.userId,
    name: key.name,
    keyLast4: key.keyLast4,
    channelAccess: accessView(key.channelAccessMode, key.allowedAddresses),
    permissions: key.permissions,
    createdAt: key.createdAt,
    updatedAt: key.updatedAt,
  };
}

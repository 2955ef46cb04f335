import { createHash, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { AccountsService } from '../accounts/accounts.service';
import { normalizeAddress, OrgTier, UserRole } from '../accounts/account.types';
import { NotFoundError } from '../common/errors';
import { ApiKey, ChannelAccessMode } from './api-key.entity';
import { Caller } from './caller';

/** `csk_` followed by 48 lowercase hex characters (spec: API key format). */
export const API_KEY_PATTERN = /^csk_[0-9a-f]{48}$/;

export type ChannelAccess = { mode: 'ALL' } | { mode: 'LINES'; lines: string[] };

export interface ApiKeyView {
  id: string;
  userId: string;
  name: string;
  keyLast4: string;
  channelAccess: ChannelAccess;
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
export class ApiKeysService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>,
    private readonly accounts: AccountsService,
  ) {}

  async create(userId: string, input: { name: string; channelAccess: ChannelAccess }): Promise<ApiKeyView & { key: string }> {
    await this.accounts.getUser(userId);
    const key = generateApiKey();
    const saved = await this.keys.save(
      this.keys.create({
        userId,
        name: input.name,
        keyHash: hashApiKey(key),
        keyLast4: key.slice(-4),
        ...accessColumns(input.channelAccess),
      }),
    );
    return { ...toView(saved), key };
  }

  async listForUser(userId: string): Promise<ApiKeyView[]> {
    await this.accounts.getUser(userId);
    const rows = await this.keys.find({ where: { userId }, order: { createdAt: 'ASC' } });
    return rows.map(toView);
  }

  /** Changes what the key may reach; the next request already sees it. The secret stays. */
  async updateChannelAccess(keyId: string, channelAccess: ChannelAccess): Promise<ApiKeyView> {
    const key = await this.keys.findOneBy({ id: keyId });
    if (!key) throw NotFoundError.of('api key', keyId, 'keyId');
    return toView(await this.keys.save(Object.assign(key, accessColumns(channelAccess))));
  }

  /** Revoking deletes the key at once; the next request with it is refused. */
  async revoke(keyId: string): Promise<void> {
    const result = await this.keys.delete({ id: keyId });
    if (!result.affected) throw NotFoundError.of('api key', keyId, 'keyId');
  }

  /**
   * False once the key is revoked (deleted). One primary-key lookup: a long request (a batch) asks
   * this between its messages, so a revocation stops it, not only the next request.
   */
  async isActive(keyId: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(`SELECT 1 FROM api_keys WHERE id = $1`, [keyId]);
    return rows.length > 0;
  }

  /**
   * Resolves a raw key to its caller, or null when the key is malformed, unknown or revoked.
   * One query: the key, its owner and org, and the owner's live lines narrowed by the allowlist.
   */
  async resolve(raw: string): Promise<Caller | null> {
    if (!API_KEY_PATTERN.test(raw)) return null;
    const rows: Array<{
      key_id: string;
      user_id: string;
      org_id: string;
      tier: OrgTier;
      role: UserRole;
      mode: ChannelAccessMode;
      line_id: string | null;
      line_type: 'EMAIL_ACCOUNT' | 'PHONE_NUMBER' | null;
      line_address: string | null;
    }> = await this.dataSource.query(
      `SELECT k.id AS key_id, u.id AS user_id, u.org_id, o.tier, u.role, k.channel_access_mode AS mode,
              l.id AS line_id, l.type AS line_type, l.address AS line_address
         FROM api_keys k
         JOIN users u ON u.id = k.user_id
         JOIN orgs o ON o.id = u.org_id
         LEFT JOIN line_memberships m ON m.user_id = u.id
         LEFT JOIN lines l ON l.id = m.line_id AND l.deleted_at IS NULL AND l.org_id = u.org_id
              AND (k.channel_access_mode = 'ALL' OR l.address = ANY (k.allowed_addresses))
        WHERE k.key_hash = $1
        ORDER BY l.created_at`,
      [hashApiKey(raw)],
    );
    if (rows.length === 0) return null;
    const first = rows[0];
    return {
      keyId: first.key_id,
      userId: first.user_id,
      orgId: first.org_id,
      orgTier: first.tier,
      role: first.role,
      channelAccess: first.mode,
      lines: rows.filter((r) => r.line_id !== null).map((r) => ({ id: r.line_id!, type: r.line_type!, address: r.line_address! })),
    };
  }
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
    createdAt: key.createdAt,
    updatedAt: key.updatedAt,
  };
}

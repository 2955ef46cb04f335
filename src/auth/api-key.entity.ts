import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { User } from '../accounts/user.entity';
import { ChannelAccessMode } from '../identity/account.types';
import { KeyPermission } from '../identity/key-permissions';

@Entity({ name: 'api_keys' })
@Index('api_keys_key_hash_key', ['keyHash'], { unique: true })
@Index('api_keys_user_id_idx', ['userId'])
@Check('api_keys_name_check', 'length(name) BETWEEN 1 AND 200')
@Check('api_keys_key_hash_check', "key_hash ~ '^[0-9a-f]{64}$'")
@Check('api_keys_channel_access_mode_check', "channel_access_mode IN ('ALL', 'LINES')")
@Check('api_keys_check', "channel_access_mode = 'LINES' OR cardinality(allowed_addresses) = 0")
@Check(
  'api_keys_permissions_check',
  "cardinality(permissions) >= 1 AND permissions <@ ARRAY['read', 'send', 'draft', 'webhooks']::text[] AND NOT permissions @> ARRAY['send', 'draft']::text[]",
)
export class ApiKey {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'api_keys_user_id_fkey' })
  user?: User;

  @Column({ type: 'text' })
  name: string;

  /** SHA-256 of the raw key, hex. Never selected unless asked for. */
  @Column({ name: 'key_hash', type: 'text', select: false })
  keyHash: string;

  /** The last 4 characters of the key, so a person can tell keys apart. */
  @Column({ name: 'key_last4', type: 'text' })
  keyLast4: string;

  @Column({ name: 'channel_access_mode', type: 'text' })
  channelAccessMode: ChannelAccessMode;

  /** Email addresses and phone numbers, used when the mode is LINES. */
  @Column({ name: 'allowed_addresses', type: 'text', array: true, default: () => "'{}'" })
  allowedAddresses: string[];

  /** What the key may do beside its lines (identity/key-permissions.ts): read, send, webhooks, in that order; never empty. */
  @Column({ type: 'text', array: true, default: () => "'{read,send,webhooks}'" })
  permissions: KeyPermission[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  /** When the key last authenticated a request, to the minute (written at most once a minute); null until first used. */
  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;
}

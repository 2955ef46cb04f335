import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { User } from '../accounts/user.entity';
import { ChannelAccessMode } from '../identity/account.types';
import { KeyPermission } from '../identity/key-permissions';
import { OAuthClient } from './oauth-client.entity';

/**
 * A person's consent to an OAuth client: channel access and permissions with the rules of an API
 * key, bound to the MCP resource, never more permissions than the client asked for (its scope).
 * Its id is a UUID of version 8 (an API key's is version 4).
 */
@Entity({ name: 'oauth_grants' })
@Index('oauth_grants_user_id_idx', ['userId'])
@Index('oauth_grants_client_id_idx', ['clientId'])
@Check('oauth_grants_id_check', "substr(id::text, 15, 1) = '8'")
@Check('oauth_grants_channel_access_mode_check', "channel_access_mode IN ('ALL', 'LINES')")
@Check(
  'oauth_grants_permissions_check',
  "cardinality(permissions) >= 1 AND permissions <@ ARRAY['read', 'send', 'draft', 'webhooks']::text[] AND NOT permissions @> ARRAY['send', 'draft']::text[]",
)
@Check('oauth_grants_check', "channel_access_mode = 'LINES' OR cardinality(allowed_addresses) = 0")
@Check('oauth_grants_requested_scopes_check', "requested_scopes <@ ARRAY['read', 'send', 'draft', 'webhooks']::text[] AND permissions <@ requested_scopes")
export class OAuthGrant {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'oauth_grants_user_id_fkey' })
  user?: User;

  @Column({ name: 'client_id', type: 'text' })
  clientId: string;

  @ManyToOne(() => OAuthClient, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'client_id', referencedColumnName: 'clientId', foreignKeyConstraintName: 'oauth_grants_client_id_fkey' })
  client?: OAuthClient;

  /** The protected resource the grant's tokens are for (the MCP endpoint's URL). */
  @Column({ type: 'text' })
  resource: string;

  @Column({ name: 'channel_access_mode', type: 'text' })
  channelAccessMode: ChannelAccessMode;

  /** Email addresses and phone numbers, used when the mode is LINES. */
  @Column({ name: 'allowed_addresses', type: 'text', array: true, default: () => "'{}'" })
  allowedAddresses: string[];

  /** What the grant's tokens may do beside its lines (identity/key-permissions.ts); never empty. */
  @Column({ type: 'text', array: true })
  permissions: KeyPermission[];

  /**
   * The scope the client asked for in its authorization request (all three when it named none):
   * the most `permissions` may ever hold, at consent and when the person changes them later.
   */
  @Column({ name: 'requested_scopes', type: 'text', array: true })
  requestedScopes: KeyPermission[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;
}

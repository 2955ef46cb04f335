import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { OAuthGrant } from './oauth-grant.entity';

export type OAuthTokenKind = 'access' | 'refresh';

/** An access or refresh token of a grant, stored only as a SHA-256. */
@Entity({ name: 'oauth_tokens' })
@Index('oauth_tokens_grant_id_idx', ['grantId'])
@Check('oauth_tokens_token_hash_check', "token_hash ~ '^[0-9a-f]{64}$'")
@Check('oauth_tokens_kind_check', "kind IN ('access', 'refresh')")
export class OAuthToken {
  /** SHA-256 of the raw token, hex. */
  @PrimaryColumn({ name: 'token_hash', type: 'text' })
  tokenHash: string;

  @Column({ name: 'grant_id', type: 'uuid' })
  grantId: string;

  @ManyToOne(() => OAuthGrant, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'grant_id', foreignKeyConstraintName: 'oauth_tokens_grant_id_fkey' })
  grant?: OAuthGrant;

  @Column({ type: 'text' })
  kind: OAuthTokenKind;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  /** When a refresh token was spent (a second use revokes its grant); null for access tokens. */
  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

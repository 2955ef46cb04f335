import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { OAuthGrant } from './oauth-grant.entity';

/** An authorization code of a grant, stored only as a SHA-256; used once. */
@Entity({ name: 'oauth_codes' })
@Index('oauth_codes_grant_id_idx', ['grantId'])
@Check('oauth_codes_code_hash_check', "code_hash ~ '^[0-9a-f]{64}$'")
export class OAuthCode {
  /** SHA-256 of the raw code, hex. */
  @PrimaryColumn({ name: 'code_hash', type: 'text' })
  codeHash: string;

  @Column({ name: 'grant_id', type: 'uuid' })
  grantId: string;

  @ManyToOne(() => OAuthGrant, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'grant_id', foreignKeyConstraintName: 'oauth_codes_grant_id_fkey' })
  grant?: OAuthGrant;

  @Column({ name: 'redirect_uri', type: 'text' })
  redirectUri: string;

  /** The PKCE code challenge (S256). */
  @Column({ name: 'code_challenge', type: 'text' })
  codeChallenge: string;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt: Date | null;
}

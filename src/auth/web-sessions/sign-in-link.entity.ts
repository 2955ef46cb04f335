import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { User } from '../../accounts/user.entity';

/** A one-time sign-in link (docs/web.md): its token is stored only as a SHA-256. */
@Entity({ name: 'sign_in_links' })
@Index('sign_in_links_token_hash_key', ['tokenHash'], { unique: true })
@Index('sign_in_links_user_id_idx', ['userId'])
@Check('sign_in_links_token_hash_check', "token_hash ~ '^[0-9a-f]{64}$'")
@Check('sign_in_links_check', 'expires_at > created_at')
export class SignInLink {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'sign_in_links_user_id_fkey' })
  user?: User;

  /** SHA-256 of the raw token, hex. */
  @Column({ name: 'token_hash', type: 'text', select: false })
  tokenHash: string;

  /** Set by the service from its Clock (tests move it), not by the database. */
  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'used_at', type: 'timestamptz', nullable: true })
  usedAt: Date | null;
}

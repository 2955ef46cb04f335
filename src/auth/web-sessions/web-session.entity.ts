import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { User } from '../../accounts/user.entity';

/** A person's session in the web app (docs/web.md): the cookie's token is stored only as a SHA-256. */
@Entity({ name: 'web_sessions' })
@Index('web_sessions_token_hash_key', ['tokenHash'], { unique: true })
@Index('web_sessions_user_id_idx', ['userId'])
@Check('web_sessions_token_hash_check', "token_hash ~ '^[0-9a-f]{64}$'")
@Check('web_sessions_csrf_token_check', 'length(csrf_token) >= 32')
@Check('web_sessions_check', 'expires_at > created_at')
export class WebSession {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'web_sessions_user_id_fkey' })
  user?: User;

  /** SHA-256 of the cookie's token, hex. */
  @Column({ name: 'token_hash', type: 'text', select: false })
  tokenHash: string;

  /** The session's CSRF token: the hidden `_csrf` field of every form it posts. */
  @Column({ name: 'csrf_token', type: 'text', select: false })
  csrfToken: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** Updated at most once a minute; the idle timeout counts from it. */
  @Column({ name: 'last_seen_at', type: 'timestamptz' })
  lastSeenAt: Date;

  /** The absolute end of the session, whatever its activity. */
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'user_agent', type: 'text', nullable: true })
  userAgent: string | null;

  @Column({ type: 'text', nullable: true })
  ip: string | null;
}

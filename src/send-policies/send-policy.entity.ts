import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Org } from '../accounts/org.entity';
import { ApiKey } from '../auth/api-key.entity';
import { OAuthGrant } from '../oauth/oauth-grant.entity';

/**
 * An org's send policy (neither credential set) or one credential's override of it (an API key or
 * an OAuth grant). In the org's row a null field is "no such rule"; in an override, "the org's value".
 */
@Entity({ name: 'send_policies' })
@Index('send_policies_org_key', ['orgId'], { unique: true, where: 'api_key_id IS NULL AND oauth_grant_id IS NULL' })
@Index('send_policies_api_key_key', ['apiKeyId'], { unique: true, where: 'api_key_id IS NOT NULL' })
@Index('send_policies_oauth_grant_key', ['oauthGrantId'], { unique: true, where: 'oauth_grant_id IS NOT NULL' })
@Index('send_policies_org_idx', ['orgId'])
@Check('send_policies_max_per_hour_check', 'max_per_hour BETWEEN 0 AND 1000000')
@Check('send_policies_max_per_day_check', 'max_per_day BETWEEN 0 AND 1000000')
@Check('send_policies_max_per_recipient_per_day_check', 'max_per_recipient_per_day BETWEEN 0 AND 1000000')
@Check('send_policies_quiet_start_check', "quiet_start ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'")
@Check('send_policies_quiet_end_check', "quiet_end ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'")
@Check('send_policies_time_zone_check', 'length(time_zone) BETWEEN 1 AND 64')
@Check('send_policies_allow_list_check', 'cardinality(allow_list) <= 500')
@Check('send_policies_deny_list_check', 'cardinality(deny_list) <= 500')
@Check('send_policies_one_credential_check', 'api_key_id IS NULL OR oauth_grant_id IS NULL')
@Check('send_policies_quiet_hours_check', '(quiet_start IS NULL) = (quiet_end IS NULL)')
export class SendPolicy {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'send_policies_pkey' })
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'send_policies_org_id_fkey' })
  org?: Org;

  @Column({ name: 'api_key_id', type: 'uuid', nullable: true })
  apiKeyId: string | null;

  @ManyToOne(() => ApiKey, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'api_key_id', foreignKeyConstraintName: 'send_policies_api_key_id_fkey' })
  apiKey?: ApiKey;

  @Column({ name: 'oauth_grant_id', type: 'uuid', nullable: true })
  oauthGrantId: string | null;

  @ManyToOne(() => OAuthGrant, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'oauth_grant_id', foreignKeyConstraintName: 'send_policies_oauth_grant_id_fkey' })
  oauthGrant?: OAuthGrant;

  @Column({ name: 'max_per_hour', type: 'integer', nullable: true })
  maxPerHour: number | null;

  @Column({ name: 'max_per_day', type: 'integer', nullable: true })
  maxPerDay: number | null;

  @Column({ name: 'max_per_recipient_per_day', type: 'integer', nullable: true })
  maxPerRecipientPerDay: number | null;

  /** Local HH:MM in time_zone. */
  @Column({ name: 'quiet_start', type: 'text', nullable: true })
  quietStart: string | null;

  @Column({ name: 'quiet_end', type: 'text', nullable: true })
  quietEnd: string | null;

  /** An IANA time zone (Intl knows it); null: UTC (org) or the org's (override). */
  @Column({ name: 'time_zone', type: 'text', nullable: true })
  timeZone: string | null;

  @Column({ name: 'allow_list', type: 'text', array: true, nullable: true })
  allowList: string[] | null;

  @Column({ name: 'deny_list', type: 'text', array: true, nullable: true })
  denyList: string[] | null;

  @Column({ name: 'replies_only', type: 'boolean', nullable: true })
  repliesOnly: boolean | null;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}

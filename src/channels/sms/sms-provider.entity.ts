import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { Line } from '../../accounts/line.entity';

export const SMS_PROVIDERS = ['twilio'] as const;
export type SmsProviderKind = (typeof SMS_PROVIDERS)[number];

/** The SMS provider account of a phone number line (docs/twilio.md); the auth token sealed with SECRETS_KEY. */
@Entity({ name: 'sms_providers' })
@Index('sms_providers_line_id_key', ['lineId'], { unique: true })
@Index('sms_providers_account_sid_idx', ['accountSid'])
@Check('sms_providers_provider_check', "provider = 'twilio'::text")
@Check('sms_providers_account_sid_check', "account_sid ~ '^[A-Za-z0-9_-]{1,64}$'::text")
export class SmsProvider {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'sms_providers_line_id_fkey' })
  line?: Line;

  @Column({ type: 'text' })
  provider: SmsProviderKind;

  /** Twilio's Account SID (`AC…`): the API path, the basic-auth user, and `AccountSid` of the requests Twilio signs. */
  @Column({ name: 'account_sid', type: 'text' })
  accountSid: string;

  @Column({ name: 'auth_token_sealed', type: 'text', select: false })
  authTokenSealed: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

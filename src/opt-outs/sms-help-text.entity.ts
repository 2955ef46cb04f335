import { Check, Column, Entity, JoinColumn, OneToOne, PrimaryColumn } from 'typeorm';
import { Org } from '../accounts/org.entity';

/** The text an org answers HELP with, when it set one (else DEFAULT_HELP_TEXT naming the org). */
@Entity({ name: 'sms_help_texts' })
@Check('sms_help_texts_text_check', 'length(text) >= 1 AND length(text) <= 320')
export class SmsHelpText {
  @PrimaryColumn({ name: 'org_id', type: 'uuid', primaryKeyConstraintName: 'sms_help_texts_pkey' })
  orgId: string;

  @OneToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'sms_help_texts_org_id_fkey' })
  org?: Org;

  @Column({ type: 'text' })
  text: string;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}

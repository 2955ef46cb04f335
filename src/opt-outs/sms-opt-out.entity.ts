import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Line } from '../accounts/line.entity';
import { Org } from '../accounts/org.entity';
import { OptKeyword } from './sms-keywords';

/** Whether a number texted STOP to a line (and not START since): the send gate refuses SMS to it from that line (docs/opt-out.md). */
@Entity({ name: 'sms_opt_outs' })
@Index('sms_opt_outs_org_number_idx', ['orgId', 'number'], { where: 'opted_out' })
@Check('sms_opt_outs_number_check', "number ~ '^\\+[1-9][0-9]{1,14}$'::text")
@Check(
  'sms_opt_outs_keyword_check',
  "keyword = ANY (ARRAY['STOP'::text, 'STOPALL'::text, 'UNSUBSCRIBE'::text, 'CANCEL'::text, 'END'::text, 'QUIT'::text, 'START'::text, 'UNSTOP'::text, 'YES'::text])",
)
export class SmsOptOut {
  @PrimaryColumn({ name: 'line_id', type: 'uuid', primaryKeyConstraintName: 'sms_opt_outs_pkey' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'sms_opt_outs_line_id_fkey' })
  line?: Line;

  /** The partner's number (E.164). */
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'sms_opt_outs_pkey' })
  number: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'sms_opt_outs_org_id_fkey' })
  org?: Org;

  @Column({ name: 'opted_out', type: 'boolean' })
  optedOut: boolean;

  /** The keyword of the last change (STOP and its synonyms, or START, UNSTOP, YES). */
  @Column({ type: 'text' })
  keyword: OptKeyword;

  /** The inbound message that made the change (no foreign key: the record of a STOP outlives the message). */
  @Column({ name: 'message_id', type: 'uuid', nullable: true })
  messageId: string | null;

  @Column({ name: 'changed_at', type: 'timestamptz', default: () => 'now()' })
  changedAt: Date;
}

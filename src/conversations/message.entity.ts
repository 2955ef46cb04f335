import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { Line } from '../accounts/line.entity';
import { Org } from '../accounts/org.entity';
import { Channel, Direction, IdentityKind } from './conversation-vocabulary';
import { Thread } from './threads/thread.entity';

/**
 * RECEIVED for inbound messages; outbound ones go QUEUED → SENT → DELIVERED, or FAILED. A scheduled
 * send (sendAt) is SCHEDULED until its time, then QUEUED (or FAILED when the send gate refuses it
 * then), or CANCELED when cancelled before (docs/messaging.md, "Statuses").
 */
export const MESSAGE_STATUSES = ['RECEIVED', 'QUEUED', 'SENT', 'DELIVERED', 'FAILED', 'SCHEDULED', 'CANCELED'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/** An SMS or an email of a thread, received or sent on its line. */
@Entity({ name: 'messages' })
@Unique('messages_tracking_token_key', ['trackingToken'])
@Index('messages_thread_idx', ['threadId', 'createdAt', 'id'])
// Created as (org_id, created_at DESC): @Index has no column direction.
@Index('messages_org_recent_idx', ['orgId', 'createdAt'])
// A carrier's or mail server's id is stored once per line and direction (a repeated ingest stores nothing).
@Index('messages_provider_key', ['lineId', 'direction', 'providerMessageId'], { unique: true, where: 'provider_message_id IS NOT NULL' })
// Send policies count a credential's sends in the last hour and day (send-policy/).
@Index('messages_sent_by_key_idx', ['sentByKeyId', 'createdAt'], { where: 'sent_by_key_id IS NOT NULL' })
// ... and its sends to one recipient in the last day (max_per_recipient_per_day), without walking all of them.
@Index('messages_sent_by_key_to_idx', ['sentByKeyId', 'toValue', 'createdAt'], { where: 'sent_by_key_id IS NOT NULL' })
// Send policies' replies-only rule: did this address write to the line first (send-policies/).
@Index('messages_inbound_from_idx', ['lineId', 'fromValue'], { where: "direction = 'INBOUND'" })
// No index names status (nor is one on send_at for the due sweep: scheduled_messages): a status change
// (SENT → DELIVERED) is then a HOT update, writing no index entry.
@Index('messages_header_message_id_idx', ['lineId', 'headerMessageId'], { where: 'header_message_id IS NOT NULL' })
// search_messages: a GIN index on an expression (subject and body), which @Index cannot declare: made by the
// migration MessageSearch, left alone by TypeORM (synchronize: false); its expression is SearchRepository's.
@Index('messages_search_idx', { synchronize: false })
@Check('messages_channel_check', "channel IN ('SMS', 'EMAIL')")
@Check('messages_direction_check', "direction IN ('INBOUND', 'OUTBOUND')")
@Check('messages_status_check', `status IN (${MESSAGE_STATUSES.map((status) => `'${status}'`).join(', ')})`)
@Check('messages_from_kind_check', "from_kind IN ('PHONE', 'EMAIL')")
@Check('messages_to_kind_check', "to_kind IN ('PHONE', 'EMAIL')")
export class Message {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'messages_org_id_fkey' })
  org?: Org;

  @Column({ name: 'thread_id', type: 'uuid' })
  threadId: string;

  @ManyToOne(() => Thread, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'thread_id', foreignKeyConstraintName: 'messages_thread_id_fkey' })
  thread?: Thread;

  @Column({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'messages_line_id_fkey' })
  line?: Line;

  @Column({ type: 'text' })
  channel: Channel;

  @Column({ type: 'text' })
  direction: Direction;

  /** One of MESSAGE_STATUSES. */
  @Column({ type: 'text' })
  status: MessageStatus;

  /** The text (an email's plain-text part). */
  @Column({ type: 'text' })
  body: string;

  /** An email's HTML part. */
  @Column({ type: 'text', nullable: true })
  html: string | null;

  @Column({ type: 'text', nullable: true })
  subject: string | null;

  @Column({ name: 'from_value', type: 'text' })
  fromValue: string;

  @Column({ name: 'from_kind', type: 'text' })
  fromKind: IdentityKind;

  @Column({ name: 'to_value', type: 'text' })
  toValue: string;

  @Column({ name: 'to_kind', type: 'text' })
  toKind: IdentityKind;

  /** The carrier's or mail server's id of the message. */
  @Column({ name: 'provider_message_id', type: 'text', nullable: true })
  providerMessageId: string | null;

  /** Why sending FAILED. */
  @Column({ type: 'text', nullable: true })
  error: string | null;

  /** Outbound email: whether opens are tracked (a pixel addressed by tracking_token). */
  @Column({ name: 'read_receipt', type: 'boolean', default: false })
  readReceipt: boolean;

  @Column({ name: 'tracking_token', type: 'text', nullable: true })
  trackingToken: string | null;

  /** Counted opens (email_opens). */
  @Column({ name: 'open_count', type: 'int', default: 0 })
  openCount: number;

  @Column({ name: 'first_opened_at', type: 'timestamptz', precision: 3, nullable: true })
  firstOpenedAt: Date | null;

  @Column({ name: 'last_opened_at', type: 'timestamptz', precision: 3, nullable: true })
  lastOpenedAt: Date | null;

  /** Email headers: Message-ID, In-Reply-To, References and List-Unsubscribe (threading and unsubscribe links). */
  @Column({ name: 'header_message_id', type: 'text', nullable: true })
  headerMessageId: string | null;

  @Column({ name: 'header_in_reply_to', type: 'text', nullable: true })
  headerInReplyTo: string | null;

  @Column({ name: 'header_references', type: 'text', array: true, default: () => "'{}'" })
  headerReferences: string[];

  @Column({ name: 'header_list_unsubscribe', type: 'text', nullable: true })
  headerListUnsubscribe: string | null;

  /** Inbound email: the SPF, DKIM and DMARC verdicts the mail server reported. */
  @Column({ name: 'auth_spf', type: 'text', nullable: true })
  authSpf: string | null;

  @Column({ name: 'auth_dkim', type: 'text', nullable: true })
  authDkim: string | null;

  @Column({ name: 'auth_dmarc', type: 'text', nullable: true })
  authDmarc: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  /**
   * An outbound message's origin (conversations/outbound/send-origin.ts): the person it was sent
   * for, and the API key or OAuth grant whose call sent it (null for a person's own action on a
   * page, and for messages older than the column). Send policies count a credential's sends by it.
   */
  @Column({ name: 'sent_by_user_id', type: 'uuid', nullable: true })
  sentByUserId: string | null;

  @Column({ name: 'sent_by_key_id', type: 'uuid', nullable: true })
  sentByKeyId: string | null;

  /** A scheduled send's time (sendAt): it stays SCHEDULED until then; null for any other message. */
  @Column({ name: 'send_at', type: 'timestamptz', precision: 3, nullable: true })
  sendAt: Date | null;

  /** When the carrier or mail server took it (null while QUEUED, or when it FAILED). */
  @Column({ name: 'sent_at', type: 'timestamptz', precision: 3, nullable: true })
  sentAt: Date | null;
}

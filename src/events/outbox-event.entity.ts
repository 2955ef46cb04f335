import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Line } from '../accounts/line.entity';
import { Org } from '../accounts/org.entity';
import { EventKind } from './event-kinds';

/** A published domain event, written in the publisher's transaction and relayed after commit. */
@Entity({ name: 'outbox_events' })
@Index('outbox_events_pending_idx', ['id'], { where: 'relayed_at IS NULL' })
@Index('outbox_events_relayed_idx', ['relayedAt'], { where: 'relayed_at IS NOT NULL' })
@Index('outbox_events_feed_idx', ['orgId', 'feedPosition'], { where: 'feed_position IS NOT NULL' })
export class OutboxEvent {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' })
  id: string;

  @Column({ type: 'text' })
  type: EventKind;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'outbox_events_org_id_fkey' })
  org?: Org;

  @Column({ name: 'line_id', type: 'uuid', nullable: true })
  lineId: string | null;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'outbox_events_line_id_fkey' })
  line?: Line | null;

  @Column({ type: 'json' })
  data: object;

  @Column({ name: 'occurred_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  occurredAt: Date;

  /** The W3C traceparent of the span that published the event; null when tracing is off (migration TraceParents). */
  @Column({ name: 'trace_parent', type: 'text', nullable: true })
  traceParent: string | null;

  /**
   * The event's position in the committed event log (the event feed's cursors), drawn when the
   * relay claims it, in commit order (OutboxRepository.markRelayed); null until then.
   */
  @Column({ name: 'feed_position', type: 'bigint', nullable: true })
  feedPosition: string | null;

  /** Set once every subscriber has taken the event. */
  @Column({ name: 'relayed_at', type: 'timestamptz', nullable: true })
  relayedAt: Date | null;
}

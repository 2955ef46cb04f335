import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { EventKind } from './event-kinds';

/** A published domain event, written in the publisher's transaction and relayed after commit. */
@Entity({ name: 'outbox_events' })
export class OutboxEvent {
  @PrimaryGeneratedColumn('increment', { type: 'bigint' })
  id: string;

  @Column({ type: 'text' })
  type: EventKind;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @Column({ name: 'line_id', type: 'uuid', nullable: true })
  lineId: string | null;

  @Column({ type: 'json' })
  data: object;

  @Column({ name: 'occurred_at', type: 'timestamptz', precision: 3 })
  occurredAt: Date;

  /** Set once every subscriber has taken the event. */
  @Column({ name: 'relayed_at', type: 'timestamptz', nullable: true })
  relayedAt: Date | null;
}

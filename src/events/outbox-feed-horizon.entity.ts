import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * One row: the highest feed position retention has deleted (OutboxRepository.deleteRelayedBefore
 * raises it in the statement that deletes). A feed cursor behind it may have lost events and is
 * answered as truncated (docs/decisions.md, "Event feed positions").
 */
@Entity({ name: 'outbox_feed_horizon' })
@Check('outbox_feed_horizon_only_row_check', 'only_row')
export class OutboxFeedHorizon {
  @PrimaryColumn({ name: 'only_row', type: 'boolean', default: true })
  onlyRow: boolean;

  @Column({ name: 'deleted_through', type: 'bigint' })
  deletedThrough: string;
}

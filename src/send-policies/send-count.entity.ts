import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A credential's sends in one hour, as one PostgreSQL backend wrote them (the trigger
 * messages_count_send: migration SendCounts). The hour and day limits read their sum as an upper
 * bound of the credential's counted sends (SendPoliciesRepository.counts).
 */
@Entity({ name: 'send_counts' })
export class SendCount {
  @PrimaryColumn({ name: 'credential_id', type: 'uuid', primaryKeyConstraintName: 'send_counts_pkey' })
  credentialId: string;

  /** Hours since the epoch (UTC) of the messages' created_at. */
  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'send_counts_pkey' })
  hour: number;

  /** The backend's pid: each writes its own row, so concurrent sends never wait for each other's. */
  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'send_counts_pkey' })
  backend: number;

  @Column({ type: 'integer' })
  sends: number;
}

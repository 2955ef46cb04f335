import { CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** Which users may use which lines: a user's live line access is the set of these. */
@Entity({ name: 'line_memberships' })
export class LineMembership {
  @PrimaryColumn({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @PrimaryColumn({ name: 'user_id', type: 'uuid' })
  userId: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

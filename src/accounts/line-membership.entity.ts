import { CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Line } from './line.entity';
import { User } from './user.entity';

/** Which users may use which lines: a user's live line access is the set of these. */
@Entity({ name: 'line_memberships' })
@Index('line_memberships_user_id_idx', ['userId'])
export class LineMembership {
  @PrimaryColumn({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'line_memberships_line_id_fkey' })
  line?: Line;

  @PrimaryColumn({ name: 'user_id', type: 'uuid' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id', foreignKeyConstraintName: 'line_memberships_user_id_fkey' })
  user?: User;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Line } from '../accounts/line.entity';
import { Org } from '../accounts/org.entity';
import { AgentMode } from './agent.types';

/** An AI agent answering the threads of one line (its mode: agent.types.ts). */
@Entity({ name: 'agents' })
@Index('agents_line_idx', ['lineId'])
@Check('agents_name_check', 'length(name) BETWEEN 1 AND 200')
@Check('agents_mode_check', "mode IN ('DRAFT', 'AUTO', 'SUPERVISED')")
export class Agent {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'agents_org_id_fkey' })
  org?: Org;

  @Column({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'agents_line_id_fkey' })
  line?: Line;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  mode: AgentMode;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

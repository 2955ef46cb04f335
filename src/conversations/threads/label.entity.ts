import { Check, Column, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { Org } from '../../accounts/org.entity';

/** A label of an org, put on threads (thread_labels). */
@Entity({ name: 'labels' })
@Unique('labels_org_id_name_key', ['orgId', 'name'])
@Check('labels_name_check', 'length(name) BETWEEN 1 AND 100')
export class Label {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'labels_org_id_fkey' })
  org?: Org;

  @Column({ type: 'text' })
  name: string;
}

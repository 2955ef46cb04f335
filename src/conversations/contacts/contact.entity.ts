import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { Org } from '../../accounts/org.entity';

/** A person of an org, whom one or more identities (phone numbers, email addresses) belong to. */
@Entity({ name: 'contacts' })
@Index('contacts_org_idx', ['orgId', 'createdAt'])
// list_contacts' order, (org_id, lower(COALESCE(display_name, '')), id): an expression index, made by the migration BoundedReads.
@Index('contacts_org_name_idx', { synchronize: false })
export class Contact {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'contacts_org_id_fkey' })
  org?: Org;

  @Column({ name: 'display_name', type: 'text', nullable: true })
  displayName: string | null;

  @Column({ type: 'text', nullable: true })
  notes: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

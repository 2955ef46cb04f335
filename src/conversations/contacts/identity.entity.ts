import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { Org } from '../../accounts/org.entity';
import { IdentityKind } from '../conversation-vocabulary';
import { Contact } from './contact.entity';

/**
 * A phone number or an email address the org has exchanged messages with: the partner of threads.
 * It belongs to a contact once one is made or merged (contact null: an orphan identity).
 */
@Entity({ name: 'identities' })
@Unique('identities_org_id_kind_value_key', ['orgId', 'kind', 'value'])
@Index('identities_contact_idx', ['contactId'])
@Check('identities_kind_check', "kind IN ('PHONE', 'EMAIL')")
export class Identity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'identities_org_id_fkey' })
  org?: Org;

  @Column({ type: 'text' })
  kind: IdentityKind;

  /** An E.164 phone number or an email address. */
  @Column({ type: 'text' })
  value: string;

  @Column({ name: 'display_name', type: 'text', nullable: true })
  displayName: string | null;

  @Column({ name: 'contact_id', type: 'uuid', nullable: true })
  contactId: string | null;

  @ManyToOne(() => Contact, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'contact_id', foreignKeyConstraintName: 'identities_contact_id_fkey' })
  contact?: Contact | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

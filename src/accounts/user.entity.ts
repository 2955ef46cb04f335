import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { UserRole } from '../identity/roles';
import { Org } from './org.entity';

@Entity({ name: 'users' })
@Index('users_email_key', ['email'], { unique: true })
@Index('users_org_id_idx', ['orgId'])
@Check('users_email_check', 'email = lower(email)')
@Check('users_role_check', "role IN ('OWNER', 'ADMIN', 'MEMBER')")
export class User {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'org_id', type: 'uuid' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id', foreignKeyConstraintName: 'users_org_id_fkey' })
  org?: Org;

  @Column({ type: 'text' })
  email: string;

  @Column({ name: 'display_name', type: 'text' })
  displayName: string;

  @Column({ type: 'text' })
  role: UserRole;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

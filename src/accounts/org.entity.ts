import { Check, Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { OrgTier } from '../identity/account.types';

@Entity({ name: 'orgs' })
@Check('orgs_name_check', 'length(name) BETWEEN 1 AND 200')
@Check('orgs_tier_check', "tier IN ('STARTER', 'PRO', 'POWER')")
export class Org {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  tier: OrgTier;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

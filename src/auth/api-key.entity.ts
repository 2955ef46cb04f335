import { Column, CreateDateColumn, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { User } from '../accounts/user.entity';

export type ChannelAccessMode = 'ALL' | 'LINES';

@Entity({ name: 'api_keys' })
export class ApiKey {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @Column({ type: 'text' })
  name: string;

  /** SHA-256 of the raw key, hex. Never selected unless asked for. */
  @Column({ name: 'key_hash', type: 'text', select: false })
  keyHash: string;

  /** The last 4 characters of the key, so a person can tell keys apart. */
  @Column({ name: 'key_last4', type: 'text' })
  keyLast4: string;

  @Column({ name: 'channel_access_mode', type: 'text' })
  channelAccessMode: ChannelAccessMode;

  /** Email addresses and phone numbers, used when the mode is LINES. */
  @Column({ name: 'allowed_addresses', type: 'text', array: true, default: () => "'{}'" })
  allowedAddresses: string[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { LineType } from '../identity/account.types';
import { Line } from '../accounts/line.entity';
// The owning side names the endpoint entity by name: a type-only import, so the two files do not import each other.
import type { WebhookEndpoint } from './webhook-endpoint.entity';

/** One line of an endpoint's channel scope (used when allChannels is false). */
@Entity({ name: 'webhook_endpoint_channels' })
@Index('webhook_endpoint_channels_line_idx', ['lineId'])
@Check('webhook_endpoint_channels_channel_type_check', "channel_type IN ('EMAIL_ACCOUNT', 'PHONE_NUMBER')")
export class WebhookEndpointChannel {
  @PrimaryColumn({ name: 'endpoint_id', type: 'uuid' })
  endpointId: string;

  @PrimaryColumn({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @ManyToOne(() => Line, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'line_id', foreignKeyConstraintName: 'webhook_endpoint_channels_line_id_fkey' })
  line?: Line;

  @Column({ name: 'channel_type', type: 'text' })
  channelType: LineType;

  @ManyToOne('WebhookEndpoint', 'channels', { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'endpoint_id', foreignKeyConstraintName: 'webhook_endpoint_channels_endpoint_id_fkey' })
  endpoint?: WebhookEndpoint;
}

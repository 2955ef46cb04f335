import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { ChannelType } from './webhook.types';
import { WebhookEndpoint } from './webhook-endpoint.entity';

/** One line of an endpoint's channel scope (used when allChannels is false). */
@Entity({ name: 'webhook_endpoint_channels' })
export class WebhookEndpointChannel {
  @PrimaryColumn({ name: 'endpoint_id', type: 'uuid' })
  endpointId: string;

  @PrimaryColumn({ name: 'line_id', type: 'uuid' })
  lineId: string;

  @Column({ name: 'channel_type', type: 'text' })
  channelType: ChannelType;

  @ManyToOne(() => WebhookEndpoint, (endpoint) => endpoint.channels, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'endpoint_id' })
  endpoint?: WebhookEndpoint;
}

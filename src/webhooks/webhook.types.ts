import { LineType } from '../identity/account.types';
import { EVENT_KINDS, EventKind } from '../events/event-kinds';

export { EVENT_KINDS };
export type { EventKind };

export const PAYLOAD_MODES = ['concise', 'verbose'] as const;
export type PayloadMode = (typeof PAYLOAD_MODES)[number];

export const ENDPOINT_STATUSES = ['active', 'disabled'] as const;
export type EndpointStatus = (typeof ENDPOINT_STATUSES)[number];

/** What an endpoint row is for: a registered webhook, or the delivery side of an MCP Events subscription. */
export type EndpointPurpose = 'webhook' | 'event_subscription';

export interface ChannelScope {
  allChannels: boolean;
  channels: Array<{ channelType: LineType; channelId: string }>;
}

export const DEFAULT_MODE: PayloadMode = 'concise';
export const DEFAULT_MESSAGE_HISTORY_COUNT = 10;
export const MAX_MESSAGE_HISTORY_COUNT = 50;
/** How long the previous secret keeps signing after a rotation (spec: Limits). */
export const PREVIOUS_SECRET_VALIDITY_MS = 24 * 60 * 60 * 1000;

/** Standard Webhooks signature versions an endpoint may choose for `webhook-signature`. */
export const SIGNATURE_VERSIONS = ['v1', 'v1a'] as const;
export type SignatureVersion = (typeof SIGNATURE_VERSIONS)[number];
export const DEFAULT_SIGNATURE_VERSION: SignatureVersion = 'v1';

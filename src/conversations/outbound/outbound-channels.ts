import { Injectable } from '@nestjs/common';
import { Channel } from '../conversation-vocabulary';

/**
 * How a channel hands a QUEUED message of its own over (the carrier for SMS, the mail server for
 * email) and records where it went through OutboundService.transition. It throws on a transient
 * failure with attempts left (`attemptsMade + 1 < HANDOFF_ATTEMPTS`), so the job is retried.
 */
export interface OutboundChannel {
  handOff(messageId: string, attemptsMade: number): Promise<void>;
}

/**
 * The channels that send, each registered by its own module (channels/sms, channels/email): the
 * hand-off job asks this for the message's channel, so conversations know no provider and every
 * import runs from the channels to conversations.
 */
@Injectable()
export class OutboundChannels {
  private readonly channels = new Map<Channel, OutboundChannel>();

  register(channel: Channel, sender: OutboundChannel): void {
    if (this.channels.has(channel)) throw new Error(`an outbound channel for ${channel} is registered twice`);
    this.channels.set(channel, sender);
  }

  for(channel: Channel): OutboundChannel {
    const sender = this.channels.get(channel);
    if (!sender) throw new Error(`no outbound channel is registered for ${channel}: its module is not loaded`);
    return sender;
  }
}

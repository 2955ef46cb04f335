import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { NotFoundError } from '../../common/errors';
import { MessageStatus } from '../../conversations/message.entity';
import { OutboundChannel, OutboundChannels } from '../../conversations/outbound/outbound-channels';
import { HANDOFF_ATTEMPTS, OutboundService } from '../../conversations/outbound/outbound.service';
import { BackgroundWork, WORKER_ROLES } from '../../queue/background-work';
import { SmsCarrier } from './sms-carrier';
import { SmsCarrierError } from './sms-gateways';
import { SmsMessagesRepository } from './sms-messages.repository';

/** A delivery report: the carrier's id of the message and where it ended. */
export interface SmsReport {
  providerMessageId: string;
  status: 'DELIVERED' | 'FAILED';
  error?: string;
}

export interface SmsReportOutcome {
  messageId: string;
  status: MessageStatus;
  changed: boolean;
}

/** A delivery report kept for a hand-off that never came (a message sent by something else with our callback URL) is dropped after a day. */
export const HELD_REPORTS_KEPT_MS = 24 * 60 * 60 * 1000;
const HELD_REPORTS_CLEANUP_EVERY_MS = 30_000;

/**
 * The SMS channel's side of sending: hands a QUEUED SMS to the line's carrier (registered with
 * conversations as the SMS outbound channel), and moves it by the carrier's delivery reports.
 */
@Injectable()
export class SmsDeliveryService implements OutboundChannel, OnModuleInit {
  private readonly logger = new Logger(SmsDeliveryService.name);

  constructor(
    private readonly channels: OutboundChannels,
    private readonly outbound: OutboundService,
    private readonly carrier: SmsCarrier,
    private readonly messages: SmsMessagesRepository,
    private readonly work: BackgroundWork,
  ) {}

  onModuleInit(): void {
    this.channels.register('SMS', this);
    // At start too: a worker restarted more often than every 30 s still cleans up.
    this.work.every({
      name: 'held sms reports cleanup',
      roles: WORKER_ROLES,
      everyMs: HELD_REPORTS_CLEANUP_EVERY_MS,
      atStart: true,
      logger: this.logger,
      run: () => this.deleteStaleReports(),
    });
  }

  /** Hands a QUEUED SMS to the carrier. Throws on a transient failure with attempts left, so Bull retries. */
  async handOff(messageId: string, attemptsMade: number): Promise<void> {
    const message = await this.messages.forHandOff(messageId);
    if (!message || message.status !== 'QUEUED') return;
    try {
      const provider =
        message.provider_account_sid && message.provider_auth_token_sealed
          ? { accountSid: message.provider_account_sid, authTokenSealed: message.provider_auth_token_sealed }
          : null;
      const { providerMessageId, reportsDelivery } = await this.carrier.send(
        { messageId, lineId: message.line_id, from: message.from_value, to: message.to_value, body: message.body },
        provider,
      );
      // Carriers with delivery reports move it to SENT; without, it is marked delivered optimistically.
      const reports = reportsDelivery ?? message.sms_delivery_reports;
      await this.outbound.transition(messageId, 'QUEUED', reports ? 'SENT' : 'DELIVERED', { providerMessageId });
      // A report that came before this hand-off stored the id (a provider's callback does not wait for its API's answer).
      const held = reports ? await this.messages.takeReport(message.line_id, providerMessageId) : undefined;
      if (held) await this.applyReport({ providerMessageId, status: held.status, error: held.error ?? undefined }, [message.line_id]);
    } catch (error) {
      const retryable = !(error instanceof SmsCarrierError) || error.retryable;
      if (retryable && attemptsMade + 1 < HANDOFF_ATTEMPTS) throw error;
      await this.outbound.transition(messageId, 'QUEUED', 'FAILED', { error: (error as Error).message });
    }
  }

  /**
   * A carrier's delivery report. Idempotent: a repeated or out-of-order report changes nothing.
   * `lineIds`: the lines the reporting account stands for (a provider's signed callback).
   */
  async applyReport(input: SmsReport, lineIds?: string[]): Promise<SmsReportOutcome> {
    const message = await this.messages.byProviderId(input.providerMessageId, lineIds);
    if (!message) throw new NotFoundError(`no outbound SMS has providerMessageId ${input.providerMessageId}`, 'providerMessageId');
    return this.applyReportTo(message, input);
  }

  /**
   * A provider's signed report for a message of `lineId`: applied, or, when no message has this id
   * yet (the hand-off has not stored it), kept for the hand-off to apply (`held`). Checked again
   * after keeping it, so a hand-off committing in between does not miss it.
   */
  async applyOrHoldReport(
    input: SmsReport,
    lineId: string,
  ): Promise<(SmsReportOutcome | { messageId: null; status: null; changed: false }) & { held: boolean }> {
    const found = await this.messages.byProviderId(input.providerMessageId, [lineId]);
    if (found) return { ...(await this.applyReportTo(found, input)), held: false };
    await this.messages.holdReport(lineId, input.providerMessageId, input.status, input.error ?? null);
    const stored = await this.messages.byProviderId(input.providerMessageId, [lineId]);
    // Still not handed off (the hand-off applies it), or handed off and taken by it meanwhile.
    const held = stored ? await this.messages.takeReport(lineId, input.providerMessageId) : undefined;
    if (!stored || !held) return { messageId: null, status: null, changed: false, held: true };
    return {
      ...(await this.applyReportTo(stored, { providerMessageId: input.providerMessageId, status: held.status, error: held.error ?? undefined })),
      held: false,
    };
  }

  /** The outbound SMS a report names, as it stands, without changing it (a provider's intermediate status); null when none of `lineIds` sent it. */
  async reportState(providerMessageId: string, lineIds: string[]): Promise<SmsReportOutcome | null> {
    const message = await this.messages.byProviderId(providerMessageId, lineIds);
    return message ? { messageId: message.id, status: message.status, changed: false } : null;
  }

  /** Drops reports no hand-off claimed within a day. */
  deleteStaleReports(): Promise<void> {
    return this.messages.deleteStaleReports(HELD_REPORTS_KEPT_MS);
  }

  private async applyReportTo(message: { id: string; status: MessageStatus }, input: SmsReport): Promise<SmsReportOutcome> {
    if (message.status !== 'SENT') return { messageId: message.id, status: message.status, changed: false };
    const changed = await this.outbound.transition(message.id, 'SENT', input.status, { error: input.error ?? null });
    return { messageId: message.id, status: changed ? input.status : message.status, changed };
  }
}

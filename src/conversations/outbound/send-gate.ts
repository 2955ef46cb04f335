import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { SendRefusedError } from '../../common/errors';
import { CredentialAccessRepository } from '../../identity/credential-access.repository';
import { SendPoliciesService } from '../../send-policies/send-policies.service';
import { OptOutsService } from '../../opt-outs/opt-outs.service';
import { SqlCondition } from '../../database/sql';
import { GateRead, GateReadQuery, gateReadSql, SendGateRepository } from './send-gate.repository';
import { QueuedMessage } from './outbound.repository';

/**
 * The one gate every outbound message passes before it is written (OutboundService.insertQueued:
 * send tools, replies, agent turns, approvals, the web forms, and a scheduled send when it comes
 * due), in the transaction that queues it. A refusal is a SendRefusedError naming its rule.
 *
 * Rules binding every send, whoever makes it:
 * - `own_line`: a message to one of the org's own live lines is refused. Such a message comes back
 *   in as inbound on that line, where an AUTO agent answers it, and so on without end.
 * - `opted_out`: an SMS to a number that texted STOP to the sending line (and not START since) is
 *   refused (opt-outs/, docs/opt-out.md); only the service's own answer to the keyword passes.
 *
 * Rules binding sends a credential (API key or OAuth grant) makes, not a person's own:
 * - `credential_access`: a scheduled send (sendAt) goes out only while its credential still may
 *   send on its line (not revoked, still holding `send`, its person still on the line, the line in
 *   its channel access): revoking an agent's key stops what it scheduled. (A draft-only
 *   credential's draft is sent, if approved, for the approving person.)
 * - the send policy (send-policies/): `deny_list`, `allow_list`, `replies_only`, `quiet_hours`,
 *   `max_per_hour`, `max_per_day`, `max_per_recipient_per_day`.
 */
@Injectable()
export class SendGate {
  constructor(
    private readonly reads: SendGateRepository,
    private readonly credentials: CredentialAccessRepository,
    private readonly policies: SendPoliciesService,
    private readonly optOuts: OptOutsService,
  ) {}

  /**
   * One statement reads what the rules ask (own line, the number's opt-out, the credential's
   * policy rows), or `alreadyRead` gives it (readColumns, carried by an earlier statement of
   * `tx`); only `credential_access` of a scheduled send, `replies_only` and the limits read
   * more. Nothing is cached: a policy or an opt-out changed before this statement binds this send.
   */
  async admit(tx: EntityManager, m: QueuedMessage, alreadyRead?: GateRead): Promise<void> {
    const keyId = m.origin.keyId;
    const read = alreadyRead ?? (await this.reads.read(tx, this.readQuery(m)));
    if (read.ownLine) {
      throw new SendRefusedError(
        `${m.to.value} is one of this org's own lines: a message to it would come back in on that line (and an agent there would answer it), so it is not sent (rule own_line)`,
        'own_line',
        null,
        'to',
      );
    }
    this.optOuts.admitWith(read.optOut);
    if (m.origin.keyId !== null && !m.origin.draftOnly && m.sendAt && !(await this.credentials.credentialMaySendOn(m.origin.keyId, m.lineId, tx))) {
      throw new SendRefusedError(
        'the API key or app that scheduled this message may no longer send on its line (revoked, its send permission or the line taken away), so it is not sent (rule credential_access)',
        'credential_access',
        null,
        'sendAt',
      );
    }
    if (keyId !== null)
      await this.policies.admitWith(tx, { orgId: m.orgId, credentialId: keyId, lineId: m.lineId, to: m.to.value, sendAt: m.sendAt ?? null }, read.policies);
  }

  /**
   * The read `admit` makes of `m`, as columns for a statement the send runs before it anyway
   * (gateReadSql; `m.threadId` is not read, so it may be a stand-in): give `admit` their
   * GateRead (gateReadOf), read in the same transaction.
   */
  readColumns(m: QueuedMessage): SqlCondition {
    return gateReadSql(this.readQuery(m));
  }

  private readQuery(m: QueuedMessage): GateReadQuery {
    return {
      orgId: m.orgId,
      to: m.to.value,
      lineType: m.to.kind === 'PHONE' ? 'PHONE_NUMBER' : 'EMAIL_ACCOUNT',
      optOutOf: this.optOuts.binds(m) ? m.lineId : null,
      credentialId: m.origin.keyId,
    };
  }

  /** `tx`'s send-policy limits are checked at its end (checkDeferredLimits) instead of in `admit`: SendPoliciesService.deferLimits. */
  deferLimits(tx: EntityManager): void {
    this.policies.deferLimits(tx);
  }

  /** The limits `admit` left to the end of `tx` (deferLimits): call as the transaction's last statements, after its messages are written. */
  checkDeferredLimits(tx: EntityManager): Promise<void> {
    return this.policies.checkDeferredLimits(tx);
  }

  /**
   * Asked again at each hand-off to the carrier (retries, the sweep): the refusal of a QUEUED
   * message whose number opted out after it was queued, or null. Only `opted_out` is asked again.
   */
  refusalAtHandOff(tx: EntityManager, m: { channel: string; lineId: string; to: string; createdAt: Date }): Promise<SendRefusedError | null> {
    return this.optOuts.refusalSince(tx, m);
  }
}

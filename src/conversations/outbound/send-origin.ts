import { isDraftOnly } from '../../identity/key-permissions';
import { Principal } from '../../identity/principal';
import { KEYWORD_REPLY } from '../../opt-outs/opt-outs.service';

/**
 * Who a send is for, carried by every outbound message from the call that makes it to the row
 * (messages.sent_by_user_id, sent_by_key_id) and to the send gate: the person, and the API key or
 * OAuth grant whose call made it. `keyId` is null when a person acts on a page (a reply, an
 * approval): send policies bound what credentials send; opt-outs and the own-lines rule bind
 * every send.
 */
export interface SendOrigin {
  userId: string | null;
  keyId: string | null;
  /**
   * A message the service sends by itself, for nobody (userId and keyId null): `sms_keyword_reply`
   * is the answer to an inbound STOP, START or HELP (opt-outs/), the one message the gate's rule
   * opted_out lets reach a number that just opted out. Never set from a caller's input.
   */
  system?: typeof KEYWORD_REPLY;
  /**
   * The call is a draft-only credential's (permission `draft`, issue 45): OutboundService.insertQueued
   * asks the gate, then holds the message as a draft turn awaiting a person (draft-holds.ts) instead
   * of queuing it. Absent on every other send.
   */
  draftOnly?: true;
}

/** The origin of a send the principal makes now. */
export function originOf(principal: Pick<Principal, 'userId' | 'keyId' | 'permissions'>): SendOrigin {
  const origin: SendOrigin = { userId: principal.userId, keyId: principal.keyId };
  return principal.keyId !== null && isDraftOnly(principal.permissions) ? { ...origin, draftOnly: true } : origin;
}

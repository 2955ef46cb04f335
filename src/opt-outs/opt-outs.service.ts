import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ForbiddenError, NotFoundError, SendRefusedError, ValidationError } from '../common/errors';
import { UserRole } from '../identity/roles';
import { EventBus } from '../events/event-bus';
import { OptOutRow, OptOutsRepository } from './opt-outs.repository';
import { smsKeywordOf, STOP_KEYWORDS } from './sms-keywords';

/** The STOP keywords as a sentence names them. */
export const STOP_KEYWORDS_TEXT = `${STOP_KEYWORDS.slice(0, -1).join(', ')} or ${STOP_KEYWORDS.at(-1)}`;

/** The longest HELP text: two SMS segments of plain text, as carriers expect a HELP answer to fit. */
export const HELP_TEXT_MAX_CHARS = 320;

/** What the service sends for nobody: the answer to an SMS keyword (SendOrigin.system). The gate lets it reach a number that just opted out. */
export const KEYWORD_REPLY = 'sms_keyword_reply';

/** An inbound SMS on a line, once recorded: what a keyword in it changes. */
export interface InboundSms {
  orgId: string;
  lineId: string;
  lineNumber: string;
  from: string;
  body: string;
  messageId: string;
  threadId: string;
  /** A repeat of a message recorded before (the carrier retrying): it changes nothing and is not answered again. */
  duplicate: boolean;
}

/** What an inbound keyword did, and the answer due to the sender (null: none), if the carrier does not answer itself. */
export interface KeywordOutcome {
  action: 'stop' | 'start' | 'help';
  changed: boolean;
  reply: string | null;
}

/** A send as the gate sees it (conversations' QueuedMessage has these). */
export interface GatedSend {
  channel: string;
  lineId: string;
  to: { value: string };
  origin: { system?: string };
}

/** An opt-out as tools and pages show it. */
export interface OptOutView {
  number: string;
  lineId: string;
  keyword: string;
  since: string;
}

/** An org's HELP answer: its own text, or the default naming it. */
export interface HelpTextView {
  text: string;
  custom: boolean;
  defaultText: string;
  maxChars: number;
}

/**
 * SMS opt-out (docs/opt-out.md): an inbound STOP (or a synonym) opts its sender out of SMS from
 * that line, START, UNSTOP or YES opts it back in, HELP or INFO is answered with the org's help
 * text. The send gate refuses an SMS to an opted-out number (rule opted_out), whoever sends it;
 * the one message that passes is the service's own answer to the keyword.
 */
@Injectable()
export class OptOutsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly optOuts: OptOutsRepository,
    private readonly bus: EventBus,
  ) {}

  /**
   * The keyword of an inbound SMS, applied in `tx`: the number's state on the line changes (with
   * sms.opted_out or sms.opted_in), and the answer a carrier expects is returned. Null when the
   * message is no keyword. A repeat changes nothing and is answered only if its first delivery's
   * change was not made yet.
   */
  async applyInbound(tx: EntityManager, sms: InboundSms): Promise<KeywordOutcome | null> {
    const keyword = smsKeywordOf(sms.body);
    if (!keyword) return null;
    if (keyword.action === 'help') return { action: 'help', changed: false, reply: sms.duplicate ? null : await this.helpAnswer(sms.orgId, tx) };
    if (sms.duplicate && (await this.optOuts.changedBy(tx, sms.lineId, sms.from, sms.messageId)))
      return { action: keyword.action, changed: false, reply: null };
    const change = { orgId: sms.orgId, lineId: sms.lineId, number: sms.from, keyword: keyword.keyword, messageId: sms.messageId };
    const row = keyword.action === 'stop' ? await this.optOuts.optOut(tx, change) : await this.optOuts.optIn(tx, change);
    if (row) {
      await this.bus.publish(
        {
          type: keyword.action === 'stop' ? 'sms.opted_out' : 'sms.opted_in',
          orgId: sms.orgId,
          lineId: sms.lineId,
          data: {
            optOut: {
              lineId: sms.lineId,
              lineNumber: sms.lineNumber,
              number: sms.from,
              optedOut: keyword.action === 'stop',
              keyword: keyword.keyword,
              changedAt: row.changed_at.toISOString(),
              threadId: sms.threadId,
              messageId: sms.messageId,
            },
          },
        },
        tx,
      );
    }
    const name = (await this.optOuts.helpText(sms.orgId, tx))?.org_name ?? 'This sender';
    if (keyword.action === 'stop') return { action: 'stop', changed: !!row, reply: row ? stopAnswer(name) : null };
    // START and UNSTOP are answered even when the number was not opted out (carriers do); YES only when it opts back in, else it is a plain "yes".
    const answered = !!row || (keyword.keyword !== 'YES' && !sms.duplicate);
    return { action: 'start', changed: !!row, reply: answered ? startAnswer(name) : null };
  }

  /**
   * The rule `opted_out` of the send gate: an SMS to a number opted out on the sending line is
   * refused (403; waiting does not lift it), unless it is the service's own answer to a keyword.
   */
  async admit(tx: EntityManager, send: GatedSend): Promise<void> {
    if (!this.binds(send)) return;
    this.admitWith(await this.optOuts.find(tx, send.lineId, send.to.value));
  }

  /** Whether the rule `opted_out` is asked about this send (an SMS, and not the answer to a keyword). */
  binds(send: GatedSend): boolean {
    return send.channel === 'SMS' && send.origin.system !== KEYWORD_REPLY;
  }

  /** `admit` with the number's opt-out on the line already read (the send gate's one read: LATEST_OPT_OUT_JSON). */
  admitWith(optOut: OptOutRow | null): void {
    if (optOut) throw refusalOf(optOut);
  }

  /**
   * For a message queued at `createdAt` and not yet handed to the carrier: the refusal when its
   * number opted out after it was queued (a retry must not send it), or null. An opt-out older
   * than the message was checked by admit already (the keyword's own answer passed it on purpose).
   */
  async refusalSince(tx: EntityManager, m: { channel: string; lineId: string; to: string; createdAt: Date }): Promise<SendRefusedError | null> {
    if (m.channel !== 'SMS') return null;
    const optOut = await this.optOuts.find(tx, m.lineId, m.to);
    return optOut && optOut.changed_at.getTime() > m.createdAt.getTime() ? refusalOf(optOut) : null;
  }

  /** The opt-outs of these numbers in the org, on the given lines only (those a caller may see): what contacts show. */
  async optOutsOf(manager: EntityManager, orgId: string, numbers: string[], lineIds: string[]): Promise<OptOutView[]> {
    const visible = new Set(lineIds);
    return (await this.optOuts.ofNumbers(manager, orgId, [...new Set(numbers)])).filter((row) => visible.has(row.line_id)).map(view);
  }

  /** Whether a thread's partner (an identity) opted out of the thread's line: what the thread shows. */
  async threadOptOut(manager: EntityManager, lineId: string, partnerIdentityId: string): Promise<OptOutView | null> {
    const row = await this.optOuts.ofIdentity(manager, lineId, partnerIdentityId);
    return row && view(row);
  }

  async helpText(orgId: string): Promise<HelpTextView> {
    const row = await this.optOuts.helpText(orgId);
    if (!row) throw NotFoundError.of('org', orgId, 'orgId');
    const defaultText = defaultHelpText(row.org_name);
    return { text: row.text ?? defaultText, custom: row.text !== null, defaultText, maxChars: HELP_TEXT_MAX_CHARS };
  }

  /** Sets the org's HELP text; null (or only spaces) goes back to the default. */
  async setHelpText(orgId: string, text: string | null): Promise<HelpTextView> {
    const trimmed = text?.trim() ?? '';
    if (trimmed.length > HELP_TEXT_MAX_CHARS) throw new ValidationError(`helpText is longer than ${HELP_TEXT_MAX_CHARS} characters`, 'helpText');
    const keyword = smsKeywordOf(trimmed);
    if (keyword) {
      // Two lines answering each other's HELP (or STOP, START) would loop: the answer must be an ordinary message.
      throw new ValidationError(
        `helpText may not be the SMS keyword ${keyword.keyword} alone: the answer would itself be read as a keyword; write a sentence`,
        'helpText',
      );
    }
    await this.dataSource.transaction(async (tx) => {
      if (!(await this.optOuts.helpText(orgId, tx))) throw NotFoundError.of('org', orgId, 'orgId');
      if (trimmed) await this.optOuts.saveHelpText(tx, orgId, trimmed);
      else await this.optOuts.deleteHelpText(tx, orgId);
    });
    return this.helpText(orgId);
  }

  /** Sets the HELP text as a person on the settings page: only an OWNER of the org may. */
  async setHelpTextAs(person: { orgId: string; role: UserRole }, text: string | null): Promise<HelpTextView> {
    if (!mayEditHelpText(person.role)) throw new ForbiddenError("only an OWNER may change the org's HELP text");
    return this.setHelpText(person.orgId, text);
  }

  private async helpAnswer(orgId: string, tx: EntityManager): Promise<string> {
    const row = await this.optOuts.helpText(orgId, tx);
    return row?.text ?? defaultHelpText(row?.org_name ?? 'This sender');
  }
}

/** Who may change the org's HELP text on the settings page: its OWNERs (the admin API may too). */
export function mayEditHelpText(role: UserRole): boolean {
  return role === 'OWNER';
}

function view(row: OptOutRow): OptOutView {
  return { number: row.number, lineId: row.line_id, keyword: row.keyword, since: row.changed_at.toISOString() };
}

export function defaultHelpText(orgName: string): string {
  return `${orgName}: this number is answered by ${orgName}. Reply STOP to stop messages, START to get them again. Msg & data rates may apply.`;
}

function stopAnswer(orgName: string): string {
  return `${orgName}: you are unsubscribed and will get no more messages from this number. Reply START to resubscribe.`;
}

function startAnswer(orgName: string): string {
  return `${orgName}: you are subscribed again to messages from this number. Reply HELP for help, STOP to unsubscribe.`;
}

/** The refusal of the rule `opted_out` (403: waiting does not lift it). */
function refusalOf(optOut: { number: string; keyword: string; changed_at: Date }): SendRefusedError {
  return new SendRefusedError(
    `${optOut.number} texted ${optOut.keyword} to this line on ${optOut.changed_at.toISOString()} and has opted out of its SMS, so nothing is sent to it (rule opted_out); ` +
      'the number can text START to opt back in',
    'opted_out',
    null,
    'to',
  );
}

import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { queryNamed } from '../database/sql';
import { OptKeyword } from './sms-keywords';

/** A number's opt-out on a line, as the gate and the pages read it. */
export interface OptOutRow {
  line_id: string;
  number: string;
  keyword: OptKeyword;
  changed_at: Date;
}

/**
 * The opt-outs of the line's number in its org, on any line row that number had: a line removed
 * (soft-deleted) and the number added again is a new row, and must not forget who texted STOP
 * (docs/opt-out.md). `o` is sms_opt_outs; the line is `:lineId`.
 */
const ofLine = (lineId: string) =>
  `o.line_id IN (SELECT same.id FROM lines l JOIN lines same ON same.org_id = l.org_id AND same.address = l.address WHERE l.id = ${lineId})`;
const OF_LINE_NUMBER = ofLine(':lineId');

/**
 * A condition for another module's statement: the number `numberSql` opted out on the line
 * `lineIdSql` (as OF_LINE_NUMBER finds it) after `sinceSql`. What the hand-off asks again
 * (OptOutsService.refusalSince) folded into the read of the message it hands off.
 */
export function optedOutSinceSql(lineIdSql: string, numberSql: string, sinceSql: string): string {
  return `EXISTS (SELECT 1 FROM sms_opt_outs o WHERE ${ofLine(lineIdSql)} AND o.number = ${numberSql} AND o.opted_out AND o.changed_at > ${sinceSql})`;
}

/**
 * For the send gate's one read (SendGate.admit): the number's opt-out on the line as json
 * (line_id, number, keyword, changed_at) or null; parameters `:lineId` and `:number`.
 */
export const LATEST_OPT_OUT_JSON = `(SELECT json_build_object('line_id', o.line_id, 'number', o.number, 'keyword', o.keyword, 'changed_at', o.changed_at)
   FROM sms_opt_outs o WHERE ${OF_LINE_NUMBER} AND o.number = :number AND o.opted_out ORDER BY o.changed_at DESC LIMIT 1)`;

/** An opt-out as LATEST_OPT_OUT_JSON gives it (json: its time a string). */
export function optOutOfJson(json: (Omit<OptOutRow, 'changed_at'> & { changed_at: string }) | null): OptOutRow | null {
  return json && { ...json, changed_at: new Date(json.changed_at) };
}

/** SQL of sms_opt_outs and sms_help_texts; the rules live in OptOutsService. */
@Injectable()
export class OptOutsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Marks the number opted out on the line; the row when this changed it (null when it was opted out already). */
  async optOut(tx: EntityManager, change: OptChange): Promise<OptOutRow | null> {
    const [row] = await queryNamed<OptOutRow[]>(
      tx,
      `INSERT INTO sms_opt_outs (line_id, number, org_id, opted_out, keyword, message_id)
       SELECT :lineId, :number, :orgId, true, :keyword, :messageId
        WHERE NOT EXISTS (SELECT 1 FROM sms_opt_outs o WHERE ${OF_LINE_NUMBER} AND o.number = :number AND o.opted_out)
       ON CONFLICT (line_id, number) DO UPDATE SET opted_out = true, keyword = EXCLUDED.keyword, message_id = EXCLUDED.message_id, changed_at = now()
         WHERE NOT sms_opt_outs.opted_out
       RETURNING line_id, number, keyword, changed_at`,
      { ...change },
    );
    return row ?? null;
  }

  /** Marks the number opted back in on the line; the row when this changed it (null when it was not opted out). */
  async optIn(tx: EntityManager, change: OptChange): Promise<OptOutRow | null> {
    // An UPDATE answers [rows, count].
    const [[row]] = await queryNamed<[OptOutRow[], number]>(
      tx,
      `UPDATE sms_opt_outs o SET opted_out = false, keyword = :keyword, message_id = :messageId, changed_at = now()
        WHERE ${OF_LINE_NUMBER} AND o.number = :number AND o.opted_out
        RETURNING o.line_id, o.number, o.keyword, o.changed_at`,
      { ...change },
    );
    return row ?? null;
  }

  /** Whether this inbound message made the number's last change on the line (a repeat of it changes nothing more). */
  async changedBy(tx: EntityManager, lineId: string, number: string, messageId: string): Promise<boolean> {
    const rows = await queryNamed<unknown[]>(tx, `SELECT 1 FROM sms_opt_outs WHERE line_id = :lineId AND number = :number AND message_id = :messageId`, {
      lineId,
      number,
      messageId,
    });
    return rows.length > 0;
  }

  /** The number's opt-out on the line's number (OF_LINE_NUMBER), if it is opted out. */
  async find(manager: EntityManager, lineId: string, number: string): Promise<OptOutRow | null> {
    const [row] = await queryNamed<OptOutRow[]>(
      manager,
      `SELECT o.line_id, o.number, o.keyword, o.changed_at FROM sms_opt_outs o WHERE ${OF_LINE_NUMBER} AND o.number = :number AND o.opted_out
        ORDER BY o.changed_at DESC LIMIT 1`,
      { lineId, number },
    );
    return row ?? null;
  }

  /** The opt-out of the identity's number on the line (a thread's partner), if it is opted out. */
  async ofIdentity(manager: EntityManager, lineId: string, identityId: string): Promise<OptOutRow | null> {
    const [row] = await queryNamed<OptOutRow[]>(
      manager,
      `SELECT o.line_id, o.number, o.keyword, o.changed_at FROM identities i
         JOIN sms_opt_outs o ON ${OF_LINE_NUMBER} AND o.number = i.value AND o.opted_out
        WHERE i.id = :identityId AND i.kind = 'PHONE'
        ORDER BY o.changed_at DESC LIMIT 1`,
      { lineId, identityId },
    );
    return row ?? null;
  }

  /** The opt-outs of these numbers in the org, on any line. */
  async ofNumbers(manager: EntityManager, orgId: string, numbers: string[]): Promise<OptOutRow[]> {
    if (numbers.length === 0) return [];
    return queryNamed<OptOutRow[]>(
      manager,
      `SELECT line_id, number, keyword, changed_at FROM sms_opt_outs WHERE org_id = :orgId AND number = ANY(:numbers::text[]) AND opted_out
        ORDER BY changed_at`,
      { orgId, numbers },
    );
  }

  /** The org's name and its own HELP text (null when it set none). */
  async helpText(orgId: string, manager: EntityManager = this.dataSource.manager): Promise<{ org_name: string; text: string | null } | null> {
    const [row] = await queryNamed<Array<{ org_name: string; text: string | null }>>(
      manager,
      `SELECT o.name AS org_name, h.text FROM orgs o LEFT JOIN sms_help_texts h ON h.org_id = o.id WHERE o.id = :orgId`,
      { orgId },
    );
    return row ?? null;
  }

  async saveHelpText(tx: EntityManager, orgId: string, text: string): Promise<void> {
    await queryNamed(
      tx,
      `INSERT INTO sms_help_texts (org_id, text) VALUES (:orgId, :text) ON CONFLICT (org_id) DO UPDATE SET text = EXCLUDED.text, updated_at = now()`,
      { orgId, text },
    );
  }

  async deleteHelpText(tx: EntityManager, orgId: string): Promise<void> {
    await queryNamed(tx, `DELETE FROM sms_help_texts WHERE org_id = :orgId`, { orgId });
  }
}

/** A keyword's change of a number on a line. */
export interface OptChange {
  orgId: string;
  lineId: string;
  number: string;
  keyword: OptKeyword;
  messageId: string | null;
}

import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { queryNamed, SqlCondition } from '../../database/sql';
import { liveLineSql } from '../../identity/lines.repository';
import { LATEST_OPT_OUT_JSON, OptOutRow, optOutOfJson } from '../../opt-outs/opt-outs.repository';
import { POLICIES_FOR_SEND_JSON, PolicyRow, policyRowsOfJson } from '../../send-policies/send-policies.repository';

/** What the send gate's rules ask of a send, read at once (SendGateRepository.read). */
export interface GateRead {
  /** The recipient is one of the org's own live lines (rule own_line). */
  ownLine: boolean;
  /** The number's opt-out on the sending line; null when none, or not asked. */
  optOut: OptOutRow | null;
  /** The org's policy and the credential's override (zero to two rows; none when not asked). */
  policies: PolicyRow[];
}

/** What GateRead is read from: the columns of `gateReadSql`. */
export interface GateReadRow {
  own_line: boolean;
  opt_out: Parameters<typeof optOutOfJson>[0];
  policies: Parameters<typeof policyRowsOfJson>[0];
}

/** What the gate's read asks about: the send's org, recipient, the line of an opt-out (null: not asked) and the credential (null: not asked). */
export interface GateReadQuery {
  orgId: string;
  to: string;
  lineType: 'PHONE_NUMBER' | 'EMAIL_ACCOUNT';
  optOutOf: string | null;
  credentialId: string | null;
}

/**
 * The gate's read as select-list columns (GateReadRow) with their `:named` parameters: its own
 * statement (SendGateRepository.read), or columns of a statement the send runs anyway (send_sms's
 * thread upsert: OutboundRepository.smsThread), one round trip fewer. The parameters are `:to`,
 * `:lineType`, `:orgId`, `:lineId` and `:number` (the opt-out's), `:credentialId`: a statement
 * that carries them must mean the same by any of these names it uses itself.
 */
export function gateReadSql(q: GateReadQuery): SqlCondition {
  return {
    sql: `EXISTS (SELECT 1 FROM lines WHERE address = :to AND type = :lineType AND org_id = :orgId AND ${liveLineSql('lines')}) AS own_line,
          ${q.optOutOf !== null ? LATEST_OPT_OUT_JSON : 'NULL::json'} AS opt_out,
          ${q.credentialId !== null ? POLICIES_FOR_SEND_JSON : `'[]'::json`} AS policies`,
    parameters: {
      to: q.to,
      lineType: q.lineType,
      orgId: q.orgId,
      ...(q.optOutOf !== null ? { lineId: q.optOutOf, number: q.to } : {}),
      ...(q.credentialId !== null ? { credentialId: q.credentialId } : {}),
    },
  };
}

/** The GateRead of gateReadSql's columns. */
export function gateReadOf(row: GateReadRow): GateRead {
  return { ownLine: row.own_line, optOut: optOutOfJson(row.opt_out), policies: policyRowsOfJson(row.policies) };
}

/** SQL of the send gate: one statement for the reads of its rules. */
@Injectable()
export class SendGateRepository {
  /**
   * The own-line probe, the number's opt-out on the line (`optOutOf`, else not read) and the
   * credential's policy rows (`credentialId`, else not read), in one statement.
   */
  async read(tx: EntityManager, q: GateReadQuery): Promise<GateRead> {
    const columns = gateReadSql(q);
    const [row] = await queryNamed<GateReadRow[]>(tx, `SELECT ${columns.sql}`, columns.parameters);
    return gateReadOf(row);
  }
}

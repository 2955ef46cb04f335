import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { queryNamed } from '../../database/sql';
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

/** SQL of the send gate: one statement for the reads of its rules. */
@Injectable()
export class SendGateRepository {
  /**
   * The own-line probe, the number's opt-out on the line (`optOutOf`, else not read) and the
   * credential's policy rows (`credentialId`, else not read), in one statement.
   */
  async read(
    tx: EntityManager,
    q: { orgId: string; to: string; lineType: 'PHONE_NUMBER' | 'EMAIL_ACCOUNT'; optOutOf: string | null; credentialId: string | null },
  ): Promise<GateRead> {
    const [row] = await queryNamed<Array<{ own_line: boolean; opt_out: Parameters<typeof optOutOfJson>[0]; policies: Parameters<typeof policyRowsOfJson>[0] }>>(
      tx,
      `SELECT EXISTS (SELECT 1 FROM lines WHERE address = :to AND type = :lineType AND org_id = :orgId AND ${liveLineSql('lines')}) AS own_line,
              ${q.optOutOf !== null ? LATEST_OPT_OUT_JSON : 'NULL::json'} AS opt_out,
              ${q.credentialId !== null ? POLICIES_FOR_SEND_JSON : `'[]'::json`} AS policies`,
      {
        to: q.to,
        lineType: q.lineType,
        orgId: q.orgId,
        ...(q.optOutOf !== null ? { lineId: q.optOutOf, number: q.to } : {}),
        ...(q.credentialId !== null ? { credentialId: q.credentialId } : {}),
      },
    );
    return { ownLine: row.own_line, optOut: optOutOfJson(row.opt_out), policies: policyRowsOfJson(row.policies) };
  }
}

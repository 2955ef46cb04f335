import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { queryNamed } from '../database/sql';
import { SendPolicyFields } from './send-policy-rules';

/** A stored policy row: the org's (credentialId null) or a credential's override. */
export interface PolicyRow extends SendPolicyFields {
  credentialId: string | null;
  updatedAt: Date;
}

/** An API key or OAuth grant of the org, as the policy pages and routes name it. */
export interface CredentialRow {
  id: string;
  kind: 'API_KEY' | 'OAUTH_GRANT';
  name: string;
  /** The person whose key or grant it is. */
  ownerId: string;
  ownerEmail: string;
}

/** The counts of a credential's recent sends the limits compare (SCHEDULED ones are not counted). */
export interface SendCounts {
  lastHour: number;
  lastDay: number;
  toRecipientLastDay: number;
}

const COLUMNS = `max_per_hour AS "maxPerHour", max_per_day AS "maxPerDay", max_per_recipient_per_day AS "maxPerRecipientPerDay",
  quiet_start AS "quietStart", quiet_end AS "quietEnd", time_zone AS "timeZone", allow_list AS "allowList", deny_list AS "denyList",
  replies_only AS "repliesOnly", COALESCE(api_key_id, oauth_grant_id) AS "credentialId", updated_at AS "updatedAt"`;

const CREDENTIALS = `
  SELECT k.id, 'API_KEY' AS kind, k.name, u.id AS "ownerId", u.email AS "ownerEmail" FROM api_keys k JOIN users u ON u.id = k.user_id WHERE u.org_id = :orgId
  UNION ALL
  SELECT g.id, 'OAUTH_GRANT' AS kind, COALESCE(c.client_name, c.client_id) AS name, u.id AS "ownerId", u.email AS "ownerEmail"
    FROM oauth_grants g JOIN users u ON u.id = g.user_id JOIN oauth_clients c ON c.client_id = g.client_id WHERE u.org_id = :orgId`;

/** A message row not written (nor last updated) by the current transaction: xmin is the transaction that wrote the row's version. */
const NOT_THIS_TRANSACTION = `messages.xmin <> pg_current_xact_id()::xid`;

const FOR_SEND = `org_id = :orgId AND ((api_key_id IS NULL AND oauth_grant_id IS NULL) OR api_key_id = :credentialId OR oauth_grant_id = :credentialId)`;

/**
 * For the send gate's one read (SendGate.admit): the org's policy and the credential's override
 * as a json array (zero to two rows, as `forSend`); parameters `:orgId` and `:credentialId`.
 */
export const POLICIES_FOR_SEND_JSON = `(SELECT COALESCE(json_agg(p), '[]'::json) FROM (SELECT ${COLUMNS} FROM send_policies WHERE ${FOR_SEND}) p)`;

/** The rows of POLICIES_FOR_SEND_JSON (json: updated_at a string). */
export function policyRowsOfJson(json: Array<Omit<PolicyRow, 'updatedAt'> & { updatedAt: string }>): PolicyRow[] {
  return json.map((row) => ({ ...row, updatedAt: new Date(row.updatedAt) }));
}

/**
 * How many of one credential's limited sends may be in flight at once without waiting for each
 * other (SendPoliciesService.checkLimits): a send far from its limits (its count + LIMIT_SLOTS at
 * most the limit) takes one slot; near a limit, every slot.
 */
export const LIMIT_SLOTS = 32;

/** The hour since the epoch (UTC) of `at`, as send_counts.hour numbers it (floor(extract(epoch FROM created_at) / 3600)). */
export function hourOf(at: Date): number {
  return Math.floor(at.getTime() / 3600_000);
}

/** SQL of send policies: the rows, and what the check counts in messages. */
@Injectable()
export class SendPoliciesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The org's policy and the credential's override, in one query (zero to two rows). */
  async forSend(manager: EntityManager, orgId: string, credentialId: string): Promise<PolicyRow[]> {
    return queryNamed<PolicyRow[]>(manager, `SELECT ${COLUMNS} FROM send_policies WHERE ${FOR_SEND}`, { orgId, credentialId });
  }

  /**
   * The credential's limit slots (LIMIT_SLOTS advisory locks, held until the transaction ends; the
   * two-key form `(hashtext('send_policies:' || id), slot)`, apart from the codebase's one-key
   * locks). A send whose count is far from every limit holds one slot (`tryOneSlotWithRoom`), a
   * send near a limit holds them all (`lockAllSlots`): see SendPoliciesService.checkLimits.
   *
   * One slot, if one is free now (never waits), kept only if the credential's counts leave room for
   * LIMIT_SLOTS more sends under every limit given (null: none): one call of `send_limit_slot`
   * (migration 1763801120000), which takes the slot, counts after it (the hour and the day as upper
   * bounds from send_counts, the recipient's day exactly) and gives it back when there is no room.
   * `own`: for a check made after this transaction's messages were written (checkDeferredLimits):
   * its messages are left out of the recipient's count and its earlier sends to the recipient added
   * (the bounds hold them already). Whether the slot was kept.
   */
  async tryOneSlotWithRoom(
    manager: EntityManager,
    credentialId: string,
    to: string,
    hourAgo: Date,
    dayAgo: Date,
    max: { perHour: number | null; perDay: number | null; toRecipientPerDay: number | null },
    own: { toRecipient: number } | null,
  ): Promise<boolean> {
    const [row] = await queryNamed<Array<{ kept: boolean }>>(
      manager,
      `SELECT send_limit_slot(:lock, :credentialId, :to, :hourFrom, :dayFrom, :dayAgo, :maxHour, :maxDay, :maxTo, ${LIMIT_SLOTS}, :othersOnly, :ownTo) AS kept`,
      {
        lock: `send_policies:${credentialId}`,
        credentialId,
        to,
        hourFrom: hourOf(hourAgo),
        dayFrom: hourOf(dayAgo),
        dayAgo,
        maxHour: max.perHour,
        maxDay: max.perDay,
        maxTo: max.toRecipientPerDay,
        othersOnly: own !== null,
        ownTo: own?.toRecipient ?? 0,
      },
    );
    return row.kept;
  }

  /** Every slot of the credential, in order (waits for each): no other limited send of the credential is in flight after it. */
  async lockAllSlots(manager: EntityManager, credentialId: string): Promise<void> {
    await queryNamed(manager, `SELECT count(pg_advisory_xact_lock(hashtext(:lock), slot)) FROM generate_series(0, ${LIMIT_SLOTS - 1}) slot`, {
      lock: `send_policies:${credentialId}`,
    });
  }

  /**
   * The credential's sends (not SCHEDULED) since `hourAgo`, since `dayAgo`, and of those to `to`,
   * each counted exactly up to its cap (a limit's max + 1 is enough to compare; 0 skips the count).
   * A busy credential's check reads at most the cap's rows per window, not every send of its day:
   * the hour and the day are one walk of messages_sent_by_key_idx, newest first, as far as the
   * larger cap (the hour's rows come first); the recipient's sends a range of
   * messages_sent_by_key_to_idx. `othersOnly`: leaves out the messages this transaction wrote (a
   * check made after its own message: SendPoliciesService.checkDeferredLimits).
   */
  async counts(
    manager: EntityManager,
    credentialId: string,
    to: string,
    hourAgo: Date,
    dayAgo: Date,
    caps: SendCounts,
    options: { othersOnly?: boolean } = {},
  ): Promise<SendCounts> {
    const counted = `sent_by_key_id = :credentialId AND created_at > :dayAgo AND status <> 'SCHEDULED'${options.othersOnly ? ` AND ${NOT_THIS_TRANSACTION}` : ''}`;
    const [row] = await queryNamed<SendCounts[]>(
      manager,
      `SELECT least(count(*) FILTER (WHERE created_at > :hourAgo), :hourCap)::int AS "lastHour", least(count(*), :dayCap)::int AS "lastDay",
              (SELECT count(*)::int FROM (SELECT 1 FROM messages WHERE to_value = :to AND ${counted} LIMIT :toCap) r) AS "toRecipientLastDay"
         FROM (SELECT created_at FROM messages WHERE ${counted} ORDER BY created_at DESC LIMIT greatest(CAST(:hourCap AS int), CAST(:dayCap AS int))) w`,
      { credentialId, to, hourAgo, dayAgo, hourCap: caps.lastHour, dayCap: caps.lastDay, toCap: caps.toRecipientLastDay },
    );
    return row;
  }

  /** Deletes the send_counts of hours no window reaches any more (older than 25 hours); answers how many rows. */
  async pruneCounts(now: Date): Promise<number> {
    const [, deleted] = await queryNamed<[unknown[], number]>(this.dataSource.manager, `DELETE FROM send_counts WHERE hour < :before`, {
      before: hourOf(now) - 25,
    });
    return deleted;
  }

  /**
   * The `nth` newest (1 = newest) counted send of the credential since `since` (to `to` only, when
   * given): with `nth` = the limit, when it leaves the window one more may go. Reads at most `nth` rows.
   * `othersOnly` as in `counts`.
   */
  async nthNewest(manager: EntityManager, credentialId: string, since: Date, nth: number, to: string | null, othersOnly = false): Promise<Date | null> {
    const [row] = await queryNamed<Array<{ created_at: Date }>>(
      manager,
      `SELECT created_at FROM messages
        WHERE sent_by_key_id = :credentialId AND created_at > :since AND status <> 'SCHEDULED' AND (CAST(:to AS text) IS NULL OR to_value = :to)${othersOnly ? ` AND ${NOT_THIS_TRANSACTION}` : ''}
        ORDER BY created_at DESC OFFSET :skip LIMIT 1`,
      { credentialId, since, skip: Math.max(0, nth - 1), to },
    );
    return row?.created_at ?? null;
  }

  /** Whether `from` has written to the line (an INBOUND message): one probe of messages_inbound_from_idx. */
  async hasWritten(manager: EntityManager, lineId: string, from: string): Promise<boolean> {
    const rows = await queryNamed<unknown[]>(
      manager,
      `SELECT 1 FROM messages WHERE line_id = :lineId AND from_value = :from AND direction = 'INBOUND' LIMIT 1`,
      {
        lineId,
        from,
      },
    );
    return rows.length > 0;
  }

  /** The org's policy row and every override, the org's first. */
  async allOf(orgId: string): Promise<PolicyRow[]> {
    return queryNamed<PolicyRow[]>(
      this.dataSource.manager,
      `SELECT ${COLUMNS} FROM send_policies WHERE org_id = :orgId ORDER BY (api_key_id IS NOT NULL OR oauth_grant_id IS NOT NULL), updated_at`,
      { orgId },
    );
  }

  /** The org's API keys and OAuth grants. */
  async credentials(orgId: string): Promise<CredentialRow[]> {
    return queryNamed<CredentialRow[]>(this.dataSource.manager, `${CREDENTIALS} ORDER BY kind, name, id`, { orgId });
  }

  /** The org's API key or OAuth grant of that id, if there is one. */
  async credential(manager: EntityManager, orgId: string, id: string): Promise<CredentialRow | undefined> {
    const [row] = await queryNamed<CredentialRow[]>(manager, `SELECT * FROM (${CREDENTIALS}) c WHERE c.id = :id`, { orgId, id });
    return row;
  }

  /** Writes the org's policy (credential null) or a credential's override, replacing every field. */
  async upsert(manager: EntityManager, orgId: string, credential: CredentialRow | null, p: SendPolicyFields): Promise<void> {
    const values = {
      orgId,
      apiKeyId: credential?.kind === 'API_KEY' ? credential.id : null,
      oauthGrantId: credential?.kind === 'OAUTH_GRANT' ? credential.id : null,
      ...p,
    };
    const target =
      credential === null
        ? '(org_id) WHERE api_key_id IS NULL AND oauth_grant_id IS NULL'
        : credential.kind === 'API_KEY'
          ? '(api_key_id) WHERE api_key_id IS NOT NULL'
          : '(oauth_grant_id) WHERE oauth_grant_id IS NOT NULL';
    await queryNamed(
      manager,
      `INSERT INTO send_policies (org_id, api_key_id, oauth_grant_id, max_per_hour, max_per_day, max_per_recipient_per_day,
                                  quiet_start, quiet_end, time_zone, allow_list, deny_list, replies_only)
       VALUES (:orgId, :apiKeyId, :oauthGrantId, :maxPerHour, :maxPerDay, :maxPerRecipientPerDay, :quietStart, :quietEnd, :timeZone,
               :allowList, :denyList, :repliesOnly)
       ON CONFLICT ${target} DO UPDATE SET max_per_hour = EXCLUDED.max_per_hour, max_per_day = EXCLUDED.max_per_day,
         max_per_recipient_per_day = EXCLUDED.max_per_recipient_per_day, quiet_start = EXCLUDED.quiet_start, quiet_end = EXCLUDED.quiet_end,
         time_zone = EXCLUDED.time_zone, allow_list = EXCLUDED.allow_list, deny_list = EXCLUDED.deny_list,
         replies_only = EXCLUDED.replies_only, updated_at = now()`,
      values,
    );
  }

  /** Deletes the credential's override; whether there was one. */
  async deleteOverride(manager: EntityManager, orgId: string, credentialId: string): Promise<boolean> {
    const [rows] = await queryNamed<[unknown[], number]>(
      manager,
      `DELETE FROM send_policies WHERE org_id = :orgId AND (api_key_id = :credentialId OR oauth_grant_id = :credentialId) RETURNING id`,
      { orgId, credentialId },
    );
    return rows.length > 0;
  }
}

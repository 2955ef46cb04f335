import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../common/clock';
import { ForbiddenError, isForeignKeyViolation, NotFoundError } from '../common/errors';
import { PrincipalRef } from '../identity/principal';
import { CredentialRow, PolicyRow, SendPoliciesRepository } from './send-policies.repository';
import {
  checkedPolicy,
  effectivePolicy,
  EMPTY_POLICY,
  isEmptyPolicy,
  isQuiet,
  LIMIT_WINDOWS,
  LimitRule,
  limitRefusal,
  POLICY_FIELDS,
  quietHoursRefusal,
  recipientRefusal,
  repliesOnlyRefusal,
  SendPolicyFields,
} from './send-policy-rules';

/** A send a policy is asked about: the credential (API key or OAuth grant) whose call makes it, the line it goes from, the recipient. */
export interface PolicySend {
  orgId: string;
  credentialId: string;
  lineId: string;
  to: string;
  /** When the message is to go: a time ahead schedules it (checked at that time, limits when it is released); null or past: now. */
  sendAt?: Date | null;
}

/** A policy as the admin API and the settings page show it. */
export interface PolicyView extends SendPolicyFields {
  updatedAt: Date | null;
}

/** A credential with its override (null: none) and the policy it is held to. */
export interface OverrideView {
  credential: CredentialRow;
  override: PolicyView | null;
  /** The org's policy (every field null when it has none). */
  org: SendPolicyFields;
  effective: SendPolicyFields;
}

/** The org's policy, and each of its credentials with its override. */
export interface PoliciesOverview {
  policy: PolicyView;
  credentials: Array<CredentialRow & { override: PolicyView | null }>;
}

/**
 * Send policies (docs/send-policies.md): what a credential (API key or OAuth grant) may send. The
 * send gate asks `admit` for every send whose origin has a credential; a person's own sends are not
 * bound. Edits (admin API, the OWNER's settings page) each run in a transaction.
 */
@Injectable()
export class SendPoliciesService {
  constructor(
    private readonly repository: SendPoliciesRepository,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly clock: Clock,
  ) {}

  /**
   * Refuses the send (SendRefusedError naming the rule) if the credential's policy does not admit
   * it. Cost: one query for the policy (none beyond when the org has none), one indexed count of at
   * most max + 1 rows a window when a limit is set, one index probe when replies-only is set. Rules that waiting cannot pass come
   * first (deny, allow, replies-only), then quiet hours, then the limits. A send scheduled ahead
   * (sendAt) is checked at its sendAt, without the limits (they bind when it is released).
   */
  async admit(tx: EntityManager, send: PolicySend): Promise<void> {
    const rows = await this.repository.forSend(tx, send.orgId, send.credentialId);
    if (rows.length === 0) return;
    const p = effectivePolicy(rows.find((r) => r.credentialId === null) ?? null, rows.find((r) => r.credentialId !== null) ?? null);
    if (isEmptyPolicy(p)) return;
    const recipient = recipientRefusal(p, send.to);
    if (recipient) throw recipient;
    if (p.repliesOnly && !(await this.repository.hasWritten(tx, send.lineId, send.to))) throw repliesOnlyRefusal(send.to);
    const now = this.clock.now();
    // Scheduling (sendAt ahead): checked at the time it is to go. The limits are left to its
    // release, when it is counted (SCHEDULED rows are not) and checked again at that time.
    const scheduling = !!send.sendAt && send.sendAt.getTime() > now.getTime();
    const at = scheduling ? send.sendAt! : now;
    if (p.quietStart !== null && p.quietEnd !== null) {
      const zone = p.timeZone ?? 'UTC';
      if (isQuiet(at, zone, p.quietStart, p.quietEnd)) throw quietHoursRefusal(at, zone, p.quietStart, p.quietEnd);
    }
    if (scheduling || (p.maxPerHour === null && p.maxPerDay === null && p.maxPerRecipientPerDay === null)) return;
    // Held until the send's transaction commits (its message inserted): the next send of the
    // credential counts it. Without it, parallel sends all pass the same count.
    await this.repository.lockCredential(tx, send.credentialId);
    const hourAgo = new Date(now.getTime() - LIMIT_WINDOWS.max_per_hour.ms);
    const dayAgo = new Date(now.getTime() - LIMIT_WINDOWS.max_per_day.ms);
    const cap = (max: number | null) => (max === null ? 0 : max + 1);
    const counts = await this.repository.counts(tx, send.credentialId, send.to, hourAgo, dayAgo, {
      lastHour: cap(p.maxPerHour),
      lastDay: cap(p.maxPerDay),
      toRecipientLastDay: cap(p.maxPerRecipientPerDay),
    });
    const full: Array<[LimitRule, number | null, number, Date, string | null]> = [
      ['max_per_hour', p.maxPerHour, counts.lastHour, hourAgo, null],
      ['max_per_day', p.maxPerDay, counts.lastDay, dayAgo, null],
      ['max_per_recipient_per_day', p.maxPerRecipientPerDay, counts.toRecipientLastDay, dayAgo, send.to],
    ];
    for (const [rule, max, count, since, to] of full) {
      if (max === null || count < max) continue;
      // The (count − max + 1)-th oldest counted send is the max-th newest: read without the full count.
      const leaving = max === 0 ? null : await this.repository.nthNewest(tx, send.credentialId, since, max, to);
      throw limitRefusal(rule, max, leaving, now);
    }
  }

  // ── reading and editing ─────────────────────────────────────────────────────────────────────

  async overview(orgId: string): Promise<PoliciesOverview> {
    const [rows, credentials] = await Promise.all([this.repository.allOf(orgId), this.repository.credentials(orgId)]);
    const org = rows.find((r) => r.credentialId === null);
    return {
      policy: org ? viewOf(org) : { ...EMPTY_POLICY, updatedAt: null },
      credentials: credentials.map((c) => {
        const row = rows.find((r) => r.credentialId === c.id);
        return { ...c, override: row ? viewOf(row) : null };
      }),
    };
  }

  /**
   * The overview as a person of the org may see it: an OWNER or ADMIN sees every credential of the
   * org (and its owner's email); a MEMBER only their own keys and grants, not who else has one.
   */
  async overviewFor(person: PrincipalRef): Promise<PoliciesOverview> {
    const overview = await this.overview(person.orgId);
    if (seesEveryCredential(person)) return overview;
    return { ...overview, credentials: overview.credentials.filter((c) => c.ownerId === person.userId) };
  }

  /** A credential's override as a person of the org may see it: another's credential is unknown (404) to a MEMBER. */
  async overrideFor(person: PrincipalRef, credentialId: string): Promise<OverrideView> {
    const view = await this.override(person.orgId, credentialId);
    if (!seesEveryCredential(person) && view.credential.ownerId !== person.userId) {
      throw new NotFoundError(`no API key or OAuth grant ${credentialId} in this org`, 'credentialId');
    }
    return view;
  }

  async orgPolicy(orgId: string): Promise<PolicyView> {
    const org = (await this.repository.allOf(orgId)).find((r) => r.credentialId === null);
    return org ? viewOf(org) : { ...EMPTY_POLICY, updatedAt: null };
  }

  /** Replaces the org's policy (every field; null: no such rule). */
  async setOrgPolicy(orgId: string, fields: SendPolicyFields): Promise<PolicyView> {
    const policy = checkedPolicy(pick(fields));
    try {
      await this.dataSource.transaction((tx) => this.repository.upsert(tx, orgId, null, policy));
    } catch (error) {
      if (isForeignKeyViolation(error)) throw NotFoundError.of('org', orgId, 'orgId');
      throw error;
    }
    return this.orgPolicy(orgId);
  }

  async override(orgId: string, credentialId: string): Promise<OverrideView> {
    const credential = await this.credentialOf(this.dataSource.manager, orgId, credentialId);
    const rows = await this.repository.forSend(this.dataSource.manager, orgId, credential.id);
    const org = rows.find((r) => r.credentialId === null) ?? null;
    const own = rows.find((r) => r.credentialId !== null) ?? null;
    return { credential, override: own ? viewOf(own) : null, org: effectivePolicy(org, null), effective: effectivePolicy(org, own) };
  }

  /** Replaces the credential's override (every field; null: the org's value). */
  async setOverride(orgId: string, credentialId: string, fields: SendPolicyFields): Promise<OverrideView> {
    const policy = checkedPolicy(pick(fields));
    await this.dataSource.transaction(async (tx) => {
      const credential = await this.credentialOf(tx, orgId, credentialId);
      await this.repository.upsert(tx, orgId, credential, policy);
    });
    return this.override(orgId, credentialId);
  }

  /** Removes the credential's override: it is held to the org's policy again. */
  async removeOverride(orgId: string, credentialId: string): Promise<void> {
    await this.dataSource.transaction(async (tx) => {
      const credential = await this.credentialOf(tx, orgId, credentialId);
      if (!(await this.repository.deleteOverride(tx, orgId, credential.id))) {
        throw new NotFoundError(`credential ${credentialId} has no send policy override`, 'credentialId');
      }
    });
  }

  /** Only an OWNER edits the org's send policies on the settings page (the admin token edits any org's). */
  assertMayEdit(person: PrincipalRef): void {
    if (person.role !== 'OWNER') throw new ForbiddenError("only the org's OWNER may change send policies", 'role');
  }

  private async credentialOf(manager: EntityManager, orgId: string, credentialId: string): Promise<CredentialRow> {
    const credential = await this.repository.credential(manager, orgId, credentialId.toLowerCase());
    if (!credential) throw new NotFoundError(`no API key or OAuth grant ${credentialId} in this org`, 'credentialId');
    return credential;
  }
}

function seesEveryCredential(person: PrincipalRef): boolean {
  return person.role === 'OWNER' || person.role === 'ADMIN';
}

function pick(fields: SendPolicyFields): SendPolicyFields {
  const result = { ...EMPTY_POLICY };
  for (const field of POLICY_FIELDS) (result as Record<string, unknown>)[field] = fields[field] ?? null;
  return result;
}

function viewOf(row: PolicyRow): PolicyView {
  const view = { ...EMPTY_POLICY, updatedAt: row.updatedAt } as PolicyView;
  for (const field of POLICY_FIELDS) (view as unknown as Record<string, unknown>)[field] = row[field];
  return view;
}

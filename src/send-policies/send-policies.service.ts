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

  /** Limit checks waiting for the end of their send's transaction (deferLimits). */
  private readonly deferred = new WeakMap<EntityManager, Array<{ send: PolicySend; policy: SendPolicyFields }>>();

  /**
   * Refuses the send (SendRefusedError naming the rule) if the credential's policy does not admit
   * it. Cost: one query for the policy (none beyond when the org has none), one indexed count of at
   * most max + 1 rows a window when a limit is set, one index probe when replies-only is set. Rules that waiting cannot pass come
   * first (deny, allow, replies-only), then quiet hours, then the limits. A send scheduled ahead
   * (sendAt) is checked at its sendAt, without the limits (they bind when it is released).
   */
  async admit(tx: EntityManager, send: PolicySend): Promise<void> {
    await this.admitWith(tx, send, await this.repository.forSend(tx, send.orgId, send.credentialId));
  }

  /** `admit` with the policy rows already read (the send gate's one read: POLICIES_FOR_SEND_JSON). */
  async admitWith(tx: EntityManager, send: PolicySend, rows: PolicyRow[]): Promise<void> {
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
    const deferred = this.deferred.get(tx);
    if (deferred) deferred.push({ send, policy: p });
    else await this.checkLimits(tx, send, p, null);
  }

  /**
   * From now on, `tx`'s limit checks wait for `checkDeferredLimits`, called by the send as the last
   * statements of its transaction (after its message is written). The per-credential lock that
   * keeps a limit exact under concurrent sends is then held from that check to the commit only,
   * not from the gate on through the message's writes: one credential's parallel sends queue for
   * a count and a commit, no longer for the whole send.
   */
  deferLimits(tx: EntityManager): void {
    this.deferred.set(tx, []);
  }

  /**
   * The limit checks `admit` left to the end of `tx` (deferLimits): each under the credential's
   * lock, counting the credential's committed sends (this transaction's own messages are left out
   * and its earlier sends added, so the comparison is the one `admit` makes before the message).
   */
  async checkDeferredLimits(tx: EntityManager): Promise<void> {
    const pending = this.deferred.get(tx) ?? [];
    this.deferred.delete(tx);
    for (const [i, { send, policy }] of pending.entries()) {
      const earlier = pending.slice(0, i).filter((e) => e.send.credentialId === send.credentialId);
      await this.checkLimits(tx, send, policy, { sends: earlier.length, toRecipient: earlier.filter((e) => e.send.to === send.to).length });
    }
  }

  /**
   * The limits, exact under concurrent sends of the credential. Each limited send holds at least
   * one of the credential's LIMIT_SLOTS slot locks from before its count to its commit, so at its
   * count at most LIMIT_SLOTS − 1 other sends of the credential are in flight unseen. A send whose
   * count leaves room for all of them under every limit (count + LIMIT_SLOTS ≤ max) passes
   * holding one slot, without waiting for the others (one round trip: tryOneSlotWithRoom);
   * otherwise (near a limit, or no slot free) it has given its slot back, takes every slot
   * (waiting for the sends in flight to end: none is then unseen) and counts exactly: as one lock on the credential did, serialising every send (the
   * security review found 17 of 30 concurrent sends passing a limit of 10 without it). `own`, for
   * a check made after the messages were written (checkDeferredLimits): the messages this
   * transaction wrote are not counted, and its sends of the credential admitted before this one
   * are added.
   */
  private async checkLimits(tx: EntityManager, send: PolicySend, p: SendPolicyFields, own: { sends: number; toRecipient: number } | null): Promise<void> {
    const { hourAgo, dayAgo } = windowsAt(this.clock.now());
    // The hour and the day as upper bounds (send_counts: a few rows, however many sends the
    // windows hold): room under them is room under the exact counts.
    const max = { perHour: p.maxPerHour, perDay: p.maxPerDay, toRecipientPerDay: p.maxPerRecipientPerDay };
    if (await this.repository.tryOneSlotWithRoom(tx, send.credentialId, send.to, hourAgo, dayAgo, max, own)) return;
    await this.repository.lockAllSlots(tx, send.credentialId);
    const now = this.clock.now();
    for (const [rule, limit, count, since, to] of await this.count(tx, send, p, own, now)) {
      if (limit === null || count < limit) continue;
      // The (count − limit + 1)-th oldest counted send is the limit-th newest: read without the full count.
      const leaving = limit === 0 ? null : await this.repository.nthNewest(tx, send.credentialId, since, limit, to, own !== null);
      throw limitRefusal(rule, limit, leaving, now);
    }
  }

  /**
   * The credential's counted sends in each limit's window, exactly, with the limit, the window's
   * start and its recipient (null: any). With `own`, this transaction's messages are left out and
   * its earlier sends added.
   */
  private async count(
    tx: EntityManager,
    send: PolicySend,
    p: SendPolicyFields,
    own: { sends: number; toRecipient: number } | null,
    now: Date,
  ): Promise<Array<[LimitRule, number | null, number, Date, string | null]>> {
    const { hourAgo, dayAgo } = windowsAt(now);
    // Counted up to max + 1: enough to compare with max.
    const cap = (max: number | null) => (max === null ? 0 : max + 1);
    const counts = await this.repository.counts(
      tx,
      send.credentialId,
      send.to,
      hourAgo,
      dayAgo,
      { lastHour: cap(p.maxPerHour), lastDay: cap(p.maxPerDay), toRecipientLastDay: cap(p.maxPerRecipientPerDay) },
      { othersOnly: own !== null },
    );
    return [
      ['max_per_hour', p.maxPerHour, counts.lastHour + (own?.sends ?? 0), hourAgo, null],
      ['max_per_day', p.maxPerDay, counts.lastDay + (own?.sends ?? 0), dayAgo, null],
      ['max_per_recipient_per_day', p.maxPerRecipientPerDay, counts.toRecipientLastDay + (own?.toRecipient ?? 0), dayAgo, send.to],
    ];
  }

  /** Deletes the per-hour send counts no limit's window reaches any more (the outbound sweep). */
  pruneCounts(): Promise<number> {
    return this.repository.pruneCounts(this.clock.now());
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

/** The starts of the hour and day windows of the limits at `now`. */
function windowsAt(now: Date): { hourAgo: Date; dayAgo: Date } {
  return { hourAgo: new Date(now.getTime() - LIMIT_WINDOWS.max_per_hour.ms), dayAgo: new Date(now.getTime() - LIMIT_WINDOWS.max_per_day.ms) };
}

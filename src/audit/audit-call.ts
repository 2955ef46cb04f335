import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager } from 'typeorm';
import type { SqlCondition } from '../database/sql';
import { isGrantId, Principal } from '../identity/principal';
import { AuditActorKind, AuditOutcome, AuditSurface } from './audit-event.entity';

/** Who made a call, as the audit row names them. */
export interface AuditActor {
  orgId: string | null;
  actorKind: AuditActorKind;
  credentialId: string | null;
  userId: string | null;
}

/** What a call is, known before it runs. */
export interface AuditCallInit extends AuditActor {
  action: string;
  surface: AuditSurface;
  /** Ids named in the arguments (targetsOf). */
  targets: AuditTargets;
}

export type AuditTargets = Record<string, string | string[]>;

/** How a call ended, known after it ran. */
export interface AuditVerdict {
  outcome: AuditOutcome;
  errorCode?: string | null;
  detail?: string | null;
  /** Ids named in the result, added to the arguments' ones. */
  targets?: AuditTargets;
}

/**
 * One changing call under way: opened by its surface (MCP tools/call of a tool that is not a
 * read, a REST or page or admin request that is not GET/HEAD), ended by AuditTrail.finish. While
 * it is open, the first transaction that commits inside it writes its row (AuditSubscriber).
 */
export class AuditCall {
  /** The row's id, once a transaction of the call has written it (it counts once that transaction committed). */
  rowId: string | null = null;
  /** The query runner whose transaction carries the row, until it has committed. */
  pendingRunner: object | null = null;
  /** True once the transaction carrying the row committed. */
  committed = false;
  /** False once the call has ended: nothing that outlives it (a timer, a job) may write its row. */
  open = true;
  /** Ids named after the row was written and before its transaction commits: the commit writes them to the row too (AuditTrail). */
  lateTargets = false;
  /** The row as a CTE for a statement of `tx` to carry, or null (AuditTrail, which opened the call: claimAuditRow). */
  carrier: ((tx: EntityManager) => SqlCondition | null) | null = null;

  constructor(
    readonly init: AuditCallInit,
    readonly at: Date,
  ) {}
}

const calls = new AsyncLocalStorage<AuditCall>();

/** The changing call the running code belongs to, if it is still open. */
export function currentAuditCall(): AuditCall | undefined {
  const call = calls.getStore();
  return call?.open ? call : undefined;
}

/**
 * Names ids the running call changes, before its row is committed (the send path names the message
 * it writes): the row then carries them from its commit, and a result naming nothing more needs
 * no second write (AuditTrail.finish). Outside a call, or once its row is committed, nothing.
 */
export function noteAuditTargets(targets: AuditTargets): void {
  const call = currentAuditCall();
  if (!call || call.committed) return;
  const before = JSON.stringify(call.init.targets);
  for (const [name, value] of Object.entries(targets)) for (const id of [value].flat()) add(call.init.targets, name, id);
  // Written already in a transaction still open (claimAuditRow): its commit updates the row.
  if (call.rowId && JSON.stringify(call.init.targets) !== before) call.lateTargets = true;
}

/**
 * The running call's audit row as a CTE (`WITH audit_row AS (…) …`) for the statement about to
 * run in `tx` to carry, when that statement is the first write of the call's first transaction
 * (the outermost one): the row is then written with the change, as at commit, one round trip
 * fewer. Null when there is nothing to carry (outside a call, a row already written, a savepoint).
 */
export function claimAuditRow(tx: EntityManager): SqlCondition | null {
  const call = currentAuditCall();
  return call?.carrier?.(tx) ?? null;
}

/** Runs `work` as part of `call`: the transactions it commits are the call's. */
export function runInAuditCall<T>(call: AuditCall, work: () => T): T {
  return calls.run(call, work);
}

/** The actor columns for a principal (a person on a page, or an API key or grant acting for its person). */
export function actorOf(principal: Principal): AuditActor {
  if (principal.keyId === null) return { orgId: principal.orgId, actorKind: 'person', credentialId: null, userId: principal.userId };
  return {
    orgId: principal.orgId,
    actorKind: isGrantId(principal.keyId) ? 'oauth_grant' : 'api_key',
    credentialId: principal.keyId,
    userId: principal.userId,
  };
}

const MAX_TARGETS = 20;
const MAX_DEPTH = 3;
const ID_VALUE = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[a-z]{2,8}_[0-9A-Za-z]{8,64})$/i;

/**
 * The ids a call's arguments or result name, by what they are: a field ending in `Id`/`Ids`
 * keeps its name (`threadId`, `labelIds`); an `id` inside an object field takes that field's name
 * (`message: {id}` → `messageId`; top level: `id`). Only values shaped like ids (a UUID, or a
 * `prefix_` token such as `evt_...`) are kept, never other text; at most MAX_TARGETS names.
 */
export function targetsOf(value: unknown, into: AuditTargets = {}): AuditTargets {
  walk(value, '', 0, into);
  return into;
}

function walk(value: unknown, name: string, depth: number, into: AuditTargets): void {
  if (depth > MAX_DEPTH || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value.slice(0, MAX_TARGETS)) walk(item, singular(name), depth + 1, into);
    return;
  }
  for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
    const idName = key === 'id' ? (name ? `${name}Id` : 'id') : /(?:Id|Ids)$/.test(key) ? key.replace(/Ids$/, 'Id') : null;
    if (idName) {
      for (const id of (Array.isArray(field) ? field : [field]).slice(0, MAX_TARGETS)) if (typeof id === 'string' && ID_VALUE.test(id)) add(into, idName, id);
    } else if (typeof field === 'object') {
      walk(field, key, depth + 1, into);
    }
  }
}

function add(into: AuditTargets, name: string, id: string): void {
  const had = into[name];
  if (had === undefined) {
    if (Object.keys(into).length < MAX_TARGETS) into[name] = id;
  } else if (typeof had === 'string') {
    if (had !== id) into[name] = [had, id];
  } else if (!had.includes(id) && had.length < MAX_TARGETS) {
    had.push(id);
  }
}

function singular(name: string): string {
  return name.endsWith('s') ? name.slice(0, -1) : name;
}

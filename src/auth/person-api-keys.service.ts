import { Injectable } from '@nestjs/common';
import { AccountsService } from '../accounts/accounts.service';
import { LineRef, LineType } from '../identity/account.types';
import { ForbiddenError, NotFoundError, ValidationError } from '../common/errors';
import { apiKeyNameProblem } from './api-key-rules';
import { ApiKey } from './api-key.entity';
import { ApiKeysRepository, PersonKeyRow } from './api-keys.repository';
import { CreateApiKey } from './key-management/create-api-key.usecase';
import { isUuid } from '../common/uuid';
import { RevokeApiKey } from './key-management/revoke-api-key.usecase';
import { UpdateApiKeyAccess } from './key-management/update-api-key-access.usecase';
import { ALL_KEY_PERMISSIONS, canonicalPermissions, KeyPermission, keyPermissionsProblem } from '../identity/key-permissions';
import { AccessView, accessColumnsOf, accessView, LineById, LineSelection, linesOfPersonChoice, PersonChannelAccess } from '../identity/line-selection';
import { PrincipalRef } from '../identity/principal';
import { LinesRepository } from '../identity/lines.repository';

export interface PersonApiKeyView {
  id: string;
  name: string;
  /** `csk_…` and the key's last 4 characters: enough to tell keys apart, nothing to use. */
  keyHint: string;
  /** LINES: the allowlist's addresses with the org's live line at each (id and type null when none: it grants nothing). */
  channelAccess: AccessView<{ id: string | null; type: LineType | null; address: string }>;
  /** What the key may do beside its lines: read, send, webhooks, in that order (identity/key-permissions.ts). */
  permissions: KeyPermission[];
  createdAt: Date;
  /** To the minute (written at most once a minute); null until first used. */
  lastUsedAt: Date | null;
  owner: { userId: string; email: string };
  /** True for the person's own keys: only those can have their channel access changed. */
  mine: boolean;
}

/**
 * A signed-in person's API keys (Settings → API keys). Everyone manages their own keys; an OWNER or
 * ADMIN also sees the org's other keys (never a secret or hash) and may revoke them, as GitHub's
 * org owners and Stripe's administrators can. Only a key's owner changes its channel access: the
 * lines must be lines the owner may use. A key the person may not see is "not found", exactly as a
 * key that never existed (docs/decisions.md, "Accounts and access").
 */
@Injectable()
export class PersonApiKeysService {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly accounts: AccountsService,
    private readonly lines: LinesRepository,
    private readonly createKey: CreateApiKey,
    private readonly updateKey: UpdateApiKeyAccess,
    private readonly revokeKey: RevokeApiKey,
  ) {}

  /** The person's own keys first, then (OWNER, ADMIN) the org's other keys; oldest first within each. */
  async listFor(person: PrincipalRef): Promise<PersonApiKeyView[]> {
    return (await this.keys.listVisibleTo(person)).map(toPersonView);
  }

  /**
   * Creates a key for the person; the answer is the only time `key` (the secret) is ever shown.
   * `permissions` left out: all three, so the key may do whatever the person may.
   */
  async createFor(
    person: PrincipalRef,
    input: { name: string; channelAccess: PersonChannelAccess; permissions?: KeyPermission[] },
  ): Promise<{ key: string; apiKey: PersonApiKeyView }> {
    const nameProblem = apiKeyNameProblem(input?.name);
    if (nameProblem) throw new ValidationError(nameProblem, 'name');
    const lines = linesOfPersonChoice(input.channelAccess);
    const permissions = checkedPermissions(input.permissions) ?? ALL_KEY_PERMISSIONS;
    if (!(await this.keys.liveRole(person))) throw NotFoundError.of('user', person.userId, 'userId');
    const access = await this.accessColumns(person, lines);
    const { key, saved } = await this.createKey.execute(person.userId, { name: input.name, access, permissions });
    const row = await this.keys.findVisibleTo(person, saved.id);
    if (!row) throw NotFoundError.of('api key', saved.id, 'keyId'); // revoked between the two statements
    return { key, apiKey: toPersonView(row) };
  }

  /**
   * Changes what one of the person's own keys may reach, and what it may do when `permissions` is
   * given (left out: they stay); the next request with the key sees it.
   * Another user's key that the person sees (OWNER, ADMIN) is refused as forbidden: its lines are
   * its owner's to choose; revoke it instead.
   */
  async updateChannelAccessFor(
    person: PrincipalRef,
    keyId: string,
    channelAccess: PersonChannelAccess,
    permissions?: KeyPermission[],
  ): Promise<PersonApiKeyView> {
    const lines = linesOfPersonChoice(channelAccess);
    const checked = checkedPermissions(permissions);
    const current = isUuid(keyId) ? await this.keys.findVisibleTo(person, keyId) : null;
    if (!current) throw NotFoundError.of('api key', keyId, 'keyId');
    if (!current.mine) throw new ForbiddenError(`api key ${keyId} belongs to ${current.owner_email}: only its owner may change its channel access`, 'keyId');
    const access = await this.accessColumns(person, lines);
    await this.updateKey.execute({ person }, keyId, { access, permissions: checked });
    const row = await this.keys.findVisibleTo(person, keyId);
    if (!row) throw NotFoundError.of('api key', keyId, 'keyId');
    return toPersonView(row);
  }

  /** Revokes (deletes) one of the person's keys, or, for an OWNER or ADMIN, any key of the org; the next request with it gets 401. */
  async revokeFor(person: PrincipalRef, keyId: string): Promise<void> {
    await this.revokeKey.execute({ person }, keyId);
  }

  /**
   * What a person may grant beside a key (an OAuth client's consent, oauth/): the channel access and
   * permissions checked by exactly the rules of createFor, as the columns a key would hold.
   */
  async checkedAccessFor(
    person: PrincipalRef,
    input: { channelAccess: PersonChannelAccess; permissions: KeyPermission[] },
  ): Promise<Pick<ApiKey, 'channelAccessMode' | 'allowedAddresses' | 'permissions'>> {
    const lines = linesOfPersonChoice(input.channelAccess);
    const permissions = checkedPermissions(input.permissions) ?? ALL_KEY_PERMISSIONS;
    if (!(await this.keys.liveRole(person))) throw NotFoundError.of('user', person.userId, 'userId');
    return { ...(await this.accessColumns(person, lines)), permissions };
  }

  /** The allowlist columns for the chosen lines, each of which must be a line the person may use now: its address is what the key holds. */
  private async accessColumns(person: PrincipalRef, selection: LineSelection<LineById>): Promise<Pick<ApiKey, 'channelAccessMode' | 'allowedAddresses'>> {
    if (selection.mode === 'ALL') return accessColumnsOf(selection);
    const ids = selection.lines.map((line) => line.id.toLowerCase());
    const mine = new Map<string, LineRef>((await this.lines.liveLinesOf(person.userId)).map((line) => [line.id, line]));
    const foreign = ids.filter((id) => !mine.has(id) && isUuid(id));
    const ofOrg = new Set((await this.accounts.linesOfOrg(person.orgId, [...new Set(foreign)])).map((line) => line.id));
    ids.forEach((id, i) => {
      const field = `channelAccess.lineIds[${i}]`;
      if (mine.has(id)) return;
      if (ofOrg.has(id)) throw new ValidationError(`${field}: line ${id} is not one of your lines`, field);
      throw new ValidationError(`${field}: line ${selection.lines[i].id} not found`, field);
    });
    return accessColumnsOf({ mode: 'LINES', lines: ids.map((id) => ({ address: mine.get(id)!.address })) });
  }
}

/** Permissions from a web form or a caller of the service, checked by the one rule (identity/key-permissions.ts); undefined when left out. */
function checkedPermissions(permissions: unknown): KeyPermission[] | undefined {
  if (permissions === undefined) return undefined;
  const problem = keyPermissionsProblem(permissions);
  if (problem) throw new ValidationError(problem, 'permissions');
  return canonicalPermissions(permissions as KeyPermission[]);
}

function toPersonView(row: PersonKeyRow): PersonApiKeyView {
  return {
    id: row.id,
    name: row.name,
    keyHint: `csk_…${row.key_last4}`,
    channelAccess: accessView(row.channel_access_mode, row.lines),
    permissions: row.permissions,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    owner: { userId: row.owner_id, email: row.owner_email },
    mine: row.mine,
  };
}

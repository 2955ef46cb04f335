import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../common/errors';
import { canonicalPermissions, KeyPermission } from '../../identity/key-permissions';
import { ApiKeysRepository } from '../api-keys.repository';
import { CredentialChanges } from '../credential-changes';
import { KeyAccess, KeyManager } from './key-manager';

/**
 * Changes what a key may reach and do (what is left out stays; the secret stays), and tells what
 * holds the key (open streams, subscriptions) so the next request already sees it. The operator
 * changes any key; a person only their own (the surface refuses another's key it shows first).
 * A key the manager may not change, or one revoked meanwhile, is not found.
 */
@Injectable()
export class UpdateApiKeyAccess {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly changes: CredentialChanges,
  ) {}

  async execute(manager: KeyManager, keyId: string, change: { access?: KeyAccess; permissions?: KeyPermission[] }): Promise<void> {
    const permissions = change.permissions && canonicalPermissions(change.permissions);
    if (!(await this.write(manager, keyId, change.access, permissions))) throw NotFoundError.of('api key', keyId, 'keyId');
    this.changes.changed(keyId);
  }

  private async write(manager: KeyManager, keyId: string, access: KeyAccess | undefined, permissions: KeyPermission[] | undefined): Promise<boolean> {
    if ('person' in manager) {
      // A person always chooses the channel access (on the form); permissions may be left out.
      if (!access) throw new Error('a person changes a key with its channel access');
      return this.keys.updateOwnAccess(manager.person, keyId, { ...access, permissions });
    }
    const key = await this.keys.findById(keyId);
    if (!key) return false;
    if (access) Object.assign(key, access);
    if (permissions) key.permissions = permissions;
    await this.keys.save(key);
    return true;
  }
}

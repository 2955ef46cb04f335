import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../common/errors';
import { ApiKeysRepository } from '../api-keys.repository';
import { CredentialChanges } from '../credential-changes';
import { isUuid } from '../../common/uuid';
import { KeyManager } from './key-manager';

/**
 * Revokes (deletes) a key at once, and tells what holds it: the next request with it gets 401.
 * The operator revokes any key; a person their own, and an OWNER or ADMIN any key of the org. A
 * key the manager may not revoke reads as not found, exactly as one that never existed.
 */
@Injectable()
export class RevokeApiKey {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly changes: CredentialChanges,
  ) {}

  async execute(manager: KeyManager, keyId: string): Promise<void> {
    const deleted = 'person' in manager ? isUuid(keyId) && (await this.keys.deleteVisibleTo(manager.person, keyId)) : await this.keys.delete(keyId);
    if (!deleted) throw NotFoundError.of('api key', keyId, 'keyId');
    this.changes.changed(keyId);
  }
}

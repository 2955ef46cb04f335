import { Injectable } from '@nestjs/common';
import { canonicalPermissions, KeyPermission } from '../../identity/key-permissions';
import { ApiKey } from '../api-key.entity';
import { ApiKeysRepository } from '../api-keys.repository';
import { generateApiKey, hashApiKey } from './api-key-secret';
import { KeyAccess } from './key-manager';

/**
 * Creates an API key for its owner, whoever asked (the operator or the person, each surface having
 * checked its own rules first): a new secret, stored as its SHA-256 hash and last 4 characters,
 * with the access and permissions given. The answer is the only time the secret is ever shown.
 */
@Injectable()
export class CreateApiKey {
  constructor(private readonly keys: ApiKeysRepository) {}

  async execute(ownerId: string, input: { name: string; access: KeyAccess; permissions: readonly KeyPermission[] }): Promise<{ key: string; saved: ApiKey }> {
    const key = generateApiKey();
    const saved = await this.keys.save({
      userId: ownerId,
      name: input.name,
      keyHash: hashApiKey(key),
      keyLast4: key.slice(-4),
      ...input.access,
      permissions: canonicalPermissions(input.permissions),
    });
    return { key, saved };
  }
}

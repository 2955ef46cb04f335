import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { queryNamed } from '../database/sql';
import { keyAllowsLine, liveLineOfUser } from './line-access.sql';

/** What an API key or OAuth grant may do now, asked by id (no token at hand): for work it started earlier. */
@Injectable()
export class CredentialAccessRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Whether the API key or OAuth grant `keyId` may still send on the line now: it exists (a
   * revoked key or grant is deleted), holds `send`, its person holds a live membership of the
   * line and its channel access allows it. What a send made earlier for the credential (a
   * scheduled one) must still hold when it goes out.
   */
  async credentialMaySendOn(keyId: string, lineId: string, manager: EntityManager = this.dataSource.manager): Promise<boolean> {
    const rows = await queryNamed<unknown[]>(
      manager,
      `SELECT 1 FROM (SELECT k.user_id, k.channel_access_mode, k.allowed_addresses, k.permissions FROM api_keys k WHERE k.id = :keyId
                      UNION ALL
                      SELECT g.user_id, g.channel_access_mode, g.allowed_addresses, g.permissions FROM oauth_grants g WHERE g.id = :keyId) c
         JOIN users u ON u.id = c.user_id
         JOIN line_memberships m ON m.user_id = u.id AND m.line_id = :lineId
         JOIN lines l ON l.id = m.line_id AND ${liveLineOfUser('l', 'u')} AND ${keyAllowsLine('c', 'l')}
        WHERE 'send' = ANY (c.permissions)`,
      { keyId, lineId },
    );
    return rows.length > 0;
  }
}

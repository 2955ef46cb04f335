import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { holdsLiveLine } from '../identity/line-access.sql';
import { queryNamed } from '../database/sql';

/** SQL of live updates: who may be told of events on which lines, now. */
@Injectable()
export class LiveRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Of the users `userIds` and the lines `lineIds`, the pairs where the user may see the line now:
   * the same rule as a webhook endpoint's owner (holdsLiveLine: a membership, the line live and of
   * the user's org). A deleted line, a removed membership or a deleted user gives no pair. One
   * statement for a whole batch of events and every stream of the process.
   */
  async visiblePairs(userIds: string[], lineIds: string[]): Promise<Array<{ user_id: string; line_id: string }>> {
    if (userIds.length === 0 || lineIds.length === 0) return [];
    return queryNamed(
      this.dataSource.manager,
      `SELECT u.id AS user_id, x.line_id
         FROM users u CROSS JOIN unnest(:lineIds::uuid[]) AS x(line_id)
        WHERE u.id = ANY (:userIds::uuid[]) AND ${holdsLiveLine('u.id', 'u', 'x.line_id')}`,
      { userIds, lineIds },
    );
  }
}

import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { queryNamed } from '../database/sql';
import { LineRef, LineType } from './account.types';

/** A live line as the lines repository answers it. */
export interface LiveLineRow {
  id: string;
  org_id: string;
  type: LineType;
  address: string;
}

/**
 * The line `l` (a table alias) is live: not deleted. The one spelling of "a live line" for a
 * statement that joins lines; a line is deleted by setting `deleted_at`, and an address is unique
 * among live lines (lines_live_address_key is a partial index on this condition).
 */
export function liveLineSql(l: string): string {
  return `${l}.deleted_at IS NULL`;
}

/**
 * The one place that finds live lines by id, by address, or by the user who may use them; every
 * feature asks it instead of writing the condition again. Each statement keeps one text, found by
 * the primary key, the live-address index or the memberships' key.
 */
@Injectable()
export class LinesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * The live line `lineId`; null when there is none or it is deleted. With `orgId`, only a line of
   * that org (a person's surface), so another org's line is not found. With `lock`, its row is held
   * (FOR SHARE) until `manager`'s transaction ends, so a deletion waits for it.
   */
  async liveLine(lineId: string, options: { orgId?: string; manager?: EntityManager; lock?: boolean } = {}): Promise<LiveLineRow | null> {
    const [line] = await queryNamed<LiveLineRow[]>(
      options.manager ?? this.dataSource.manager,
      `SELECT id, org_id, type, address FROM lines WHERE id = :lineId AND ${liveLineSql('lines')} AND (:orgId::uuid IS NULL OR org_id = :orgId::uuid)` +
        (options.lock ? ' FOR SHARE' : ''),
      { lineId, orgId: options.orgId ?? null },
    );
    return line ?? null;
  }

  /** The live line of this type with this address (one at most: lines_live_address_key); null when there is none. */
  async liveLineByAddress(address: string, type: LineType, manager: EntityManager = this.dataSource.manager): Promise<LiveLineRow | null> {
    const [line] = await queryNamed<LiveLineRow[]>(
      manager,
      `SELECT id, org_id, type, address FROM lines WHERE address = :address AND type = :type AND ${liveLineSql('lines')}`,
      { address, type },
    );
    return line ?? null;
  }

  /** Of these addresses, those of live lines of this type. */
  async liveAddresses(addresses: string[], type: LineType): Promise<string[]> {
    const rows = await queryNamed<Array<{ address: string }>>(
      this.dataSource.manager,
      `SELECT address FROM lines WHERE type = :type AND ${liveLineSql('lines')} AND address = ANY (:addresses::text[])`,
      { addresses, type },
    );
    return rows.map((r) => r.address);
  }

  /** The lines a user may use now: live memberships on lines not deleted, oldest line first. */
  liveLinesOf(userId: string): Promise<LineRef[]> {
    return queryNamed<LineRef[]>(
      this.dataSource.manager,
      `SELECT l.id, l.type, l.address FROM lines l JOIN line_memberships m ON m.line_id = l.id AND m.user_id = :userId
        WHERE ${liveLineSql('l')} ORDER BY l.created_at ASC`,
      { userId },
    );
  }
}

import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { EventKind } from './event-kinds';
import { DomainEvent } from './domain-event';

export const OUTBOX_CHANNEL = 'outbox_events';

/**
 * Publishing: the event is written to the outbox in the caller's transaction, so it exists
 * exactly when the change that caused it commits. NOTIFY (delivered at commit) wakes the relay.
 */
@Injectable()
export class EventBus {
  async publish<K extends EventKind>(event: DomainEvent<K>, manager: EntityManager): Promise<string> {
    return (await this.publishAll([event], manager))[0];
  }

  async publishAll(events: DomainEvent[], manager: EntityManager): Promise<string[]> {
    if (events.length === 0) return [];
    if (!manager.queryRunner?.isTransactionActive) {
      throw new Error('EventBus.publish must run inside the transaction of the change it reports');
    }
    const rows: Array<{ id: string }> = await manager.query(
      `INSERT INTO outbox_events (type, org_id, line_id, data)
       SELECT * FROM unnest($1::text[], $2::uuid[], $3::uuid[], $4::json[])
       RETURNING id`,
      [
        events.map((e) => e.type),
        events.map((e) => e.orgId),
        events.map((e) => e.lineId),
        events.map((e) => JSON.stringify(e.data)),
      ],
    );
    await manager.query(`SELECT pg_notify('${OUTBOX_CHANNEL}', '')`);
    return rows.map((r) => String(r.id));
  }
}

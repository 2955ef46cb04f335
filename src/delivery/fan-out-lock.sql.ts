import { EntityManager } from 'typeorm';
import { queryNamed } from '../database/sql';

/**
 * Arbitrary constant naming the lock between webhook fan-out and the creation of an MCP Events
 * subscription (outbox.repository.ts and migrate.ts name others).
 */
export const FAN_OUT_LOCK_KEY = 727_100_044;

/**
 * Taken first by every fan-out, shared (fan-outs run side by side), until its relay transaction
 * ends. A fan-out decides its targets with a query that sees the endpoints committed when it
 * runs, but the events it fans out are numbered in the feed later, at the end of the relay's
 * transaction (OutboxRepository.markRelayed). Without this lock a subscription committed between
 * the two would miss an event whose position is after the head it was answered: that event was
 * fanned out without it (docs/decisions.md, "No event falls between subscribe and the first delivery").
 */
export async function holdFanOutShared(manager: EntityManager): Promise<void> {
  await queryNamed(manager, 'SELECT pg_advisory_xact_lock_shared(:key)', { key: FAN_OUT_LOCK_KEY });
}

/**
 * Taken exclusively by the transaction that creates a subscription's endpoint row, before it
 * inserts it and reads the feed's head: it waits for every fan-out under way to commit (their
 * events are then at or below the head it reads), and every fan-out after it sees the new row.
 * So each event is either at or before the answered head or fanned out to the subscription.
 */
export async function holdFanOutExclusive(manager: EntityManager): Promise<void> {
  await queryNamed(manager, 'SELECT pg_advisory_xact_lock(:key)', { key: FAN_OUT_LOCK_KEY });
}

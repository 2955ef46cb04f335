import { DataSource } from 'typeorm';

/**
 * Stores `data` as a delivery payload the way fan-out does (keyed by the SHA-256 of its JSON
 * text and today, found again when the same content was stored today); returns the payload id, for tests
 * that insert delivery rows directly.
 */
export async function storePayload(db: DataSource, data: object): Promise<string> {
  const [row]: Array<{ id: string }> = await db.query(
    `INSERT INTO webhook_payloads (digest, data, created_at) VALUES (sha256(convert_to($1::text, 'UTF8')), $1::json, delivery_log_day(now()::timestamptz(3)))
     ON CONFLICT (digest, created_at) DO UPDATE SET data = webhook_payloads.data RETURNING id`,
    [JSON.stringify(data)],
  );
  return row.id;
}

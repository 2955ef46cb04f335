import { DataSource } from 'typeorm';
import { SecretBox } from '../common/secret-box';

/** Every column that holds values sealed by SecretBox (a new sealed column must be listed here). */
export const SEALED_COLUMNS: ReadonlyArray<{ table: string; column: string; what: string }> = [
  { table: 'webhook_endpoints', column: 'secret_sealed', what: 'webhook signing secrets' },
  { table: 'webhook_endpoints', column: 'previous_secret_sealed', what: 'previous webhook signing secrets (24 h after a rotation)' },
  { table: 'webhook_endpoints', column: 'signing_key_sealed', what: 'ed25519 signing keys of v1a webhook endpoints' },
  { table: 'webhook_endpoints', column: 'previous_signing_key_sealed', what: 'previous ed25519 signing keys (24 h after a rotation)' },
  { table: 'mailboxes', column: 'imap_password_sealed', what: 'IMAP passwords of mailboxes' },
  { table: 'mailboxes', column: 'smtp_password_sealed', what: 'SMTP passwords of mailboxes' },
  { table: 'sms_providers', column: 'auth_token_sealed', what: 'auth tokens of SMS provider accounts' },
];

export class SealedSecretsError extends Error {
  override name = 'SealedSecretsError';
}

interface Group {
  key_id: string | null;
  count: string;
  sample: string;
}

/**
 * Start-up check: every stored sealed value must open with SECRETS_KEY or one of
 * SECRETS_KEY_FALLBACKS. Values of the current format name their key, so one value per key id
 * proves the whole group; values of the first format name none and are each tried (a rotation
 * re-seals them into the current format). Throws SealedSecretsError naming what cannot be opened,
 * so a process with the wrong key refuses to start instead of failing at send time.
 */
export async function checkSealedSecrets(dataSource: DataSource, box: SecretBox): Promise<void> {
  const problems: string[] = [];
  for (const { table, column, what } of SEALED_COLUMNS) {
    const groups: Group[] = await dataSource.query(
      `SELECT CASE WHEN ${column} LIKE 'v2.%' THEN split_part(${column}, '.', 2) END AS key_id,
              count(*) AS count, min(${column}) AS sample
         FROM ${table} WHERE ${column} IS NOT NULL AND ${column} LIKE 'v2.%'
        GROUP BY 1`,
    );
    for (const group of groups) {
      if (!opens(box, group.sample)) problems.push(`${group.count} ${what} (${table}.${column}) sealed under key id ${group.key_id}`);
    }
    let unopened = 0;
    await forEachBatch(dataSource, table, column, `${column} NOT LIKE 'v2.%'`, async (rows) => {
      unopened += rows.filter((row) => !opens(box, row.sealed)).length;
    });
    if (unopened > 0) problems.push(`${unopened} ${what} (${table}.${column}) sealed without a key id`);
  }
  if (problems.length > 0) {
    throw new SealedSecretsError(
      `SECRETS_KEY (key id ${box.currentKeyId}) cannot open secrets already stored in the database:\n  - ${problems.join('\n  - ')}\n` +
        'Start with SECRETS_KEY set to the key they were sealed with (or list that key in SECRETS_KEY_FALLBACKS while rotating). ' +
        'A new key cannot recover them. See docs/operations.md, "Rotating SECRETS_KEY".',
    );
  }
}

/**
 * Re-seals every stored value that is not sealed under SECRETS_KEY (the rotation's step 3), in
 * batches of `batchSize` rows, each batch one short statement. A value changed meanwhile (a
 * concurrent rotate_webhook_secret) is left alone: it is already sealed under the current key.
 * Safe to run twice, and while the service runs.
 */
export async function resealSecrets(
  dataSource: DataSource,
  box: SecretBox,
  options: { batchSize?: number; onProgress?: (progress: { table: string; column: string; scanned: number; resealed: number }) => void } = {},
): Promise<{ scanned: number; resealed: number }> {
  const totals = { scanned: 0, resealed: 0 };
  for (const { table, column } of SEALED_COLUMNS) {
    const progress = { table, column, scanned: 0, resealed: 0 };
    const current = `v2.${box.currentKeyId}.`;
    await forEachBatch(
      dataSource,
      table,
      column,
      'true',
      async (rows) => {
        // A value no configured key opens cannot be re-sealed: the check that follows names it.
        const stale = rows.filter((row) => !row.sealed.startsWith(current) && opens(box, row.sealed));
        if (stale.length > 0) {
          const fresh = stale.map((row) => box.seal(box.open(row.sealed)));
          const [, changed]: [unknown, number] = await dataSource.query(
            `UPDATE ${table} t SET ${column} = x.fresh
             FROM unnest($1::uuid[], $2::text[], $3::text[]) AS x(id, stale, fresh)
            WHERE t.id = x.id AND t.${column} = x.stale`,
            [stale.map((r) => r.id), stale.map((r) => r.sealed), fresh],
          );
          progress.resealed += changed;
        }
        progress.scanned += rows.length;
        options.onProgress?.({ ...progress });
      },
      options.batchSize,
    );
    totals.scanned += progress.scanned;
    totals.resealed += progress.resealed;
  }
  return totals;
}

/** False for a value no configured key opens (or a damaged one: it cannot be used either). */
function opens(box: SecretBox, sealed: string): boolean {
  try {
    box.open(sealed);
    return true;
  } catch {
    return false;
  }
}

/** Walks a table's non-null sealed values in id order, `batchSize` rows per query. */
async function forEachBatch(
  dataSource: DataSource,
  table: string,
  column: string,
  condition: string,
  visit: (rows: Array<{ id: string; sealed: string }>) => Promise<void>,
  batchSize = 500,
): Promise<void> {
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const rows: Array<{ id: string; sealed: string }> = await dataSource.query(
      `SELECT id, ${column} AS sealed FROM ${table}
        WHERE ${column} IS NOT NULL AND (${condition}) AND id > $1 ORDER BY id LIMIT $2`,
      [after, batchSize],
    );
    if (rows.length === 0) return;
    await visit(rows);
    after = rows[rows.length - 1].id;
    if (rows.length < batchSize) return;
  }
}

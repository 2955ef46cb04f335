/**
 * Deletes in small batches: runs `sql` (one DELETE, its own short transaction, whose last
 * parameter is the most rows one batch may delete) until a batch deletes fewer than `batchSize`,
 * pausing `pauseMs` between batches, so that retention never holds locks long nor starves the
 * work that shares the database. Answers the rows deleted and the batches run.
 */
export async function deleteInBatches(
  db: { query(sql: string, params: unknown[]): Promise<unknown> },
  sql: string,
  params: unknown[],
  options: { batchSize: number; pauseMs: number },
): Promise<{ rows: number; batches: number }> {
  let rows = 0;
  let batches = 0;
  for (;;) {
    // A DELETE answers [rows returned, rows affected].
    const [, deleted] = (await db.query(sql, [...params, options.batchSize])) as [unknown, number];
    rows += deleted;
    batches += 1;
    if (deleted < options.batchSize) return { rows, batches };
    await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
  }
}

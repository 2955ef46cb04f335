/**
 * The auto-disable rule's SQL, owned here. Failures extend an endpoint's failing run (counted by
 * WebhooksService.recordFailures, endpoints locked in id order); a 2xx ends it. The delivery
 * worker records a batch of successes in one statement, one commit (PERFORMANCE.md, change 1),
 * which only takes KEY SHARE locks on the endpoints; the runs it ends are ended after that
 * commit, by the statements here.
 *
 * Why not in the success statement, or in one UPDATE of several rows: a statement that locks an
 * endpoint row and then updates it (or updates several rows, in whatever order its plan meets
 * them) can deadlock with a failure batch locking the same endpoints, and PostgreSQL then aborts
 * one of the two; an aborted failure batch loses the record of attempts already sent. Seen under
 * two workers (the replicas reliability run) until each run is ended by a statement touching one
 * row, which holds no other lock while it waits.
 *
 * Only the endpoints that the success statement found in a run are looked at again after it
 * (DeliveryAttemptsRepository.recordSuccesses): almost every batch finds none, and this round
 * trip was a fifth of the worker's statements (docs/PERFORMANCE.md, change 30). A failure whose
 * record had not committed when the success statement read the endpoint (its KEY SHARE lock does
 * not wait for a failure batch's NO KEY UPDATE), though its attempt began before the success was
 * answered, begins a run that stands until the next success: as it always did when it committed
 * after the look here, which was one round trip later.
 */

/**
 * SQL: whether the endpoint row `e` is in a failing run. The success statement reads it under its
 * KEY SHARE lock, so that a batch whose endpoints are in no run ends none without a round trip.
 */
export function inFailingRun(e: string): string {
  return `(${e}.consecutive_failures <> 0 OR ${e}.failing_since IS NOT NULL)`;
}

/**
 * The endpoints among the batch's answers (`:endpointIds`, `:answeredAts`: each endpoint's latest
 * answered success) whose failing run that success ends, in id order. Locks nothing: most
 * batches find none, in one round trip.
 */
export const RUNS_ENDED_BY_ANSWERS = `SELECT w.id, s.at FROM webhook_endpoints w
    JOIN unnest(:endpointIds::uuid[], :answeredAts::timestamptz[]) AS s(endpoint_id, at) ON s.endpoint_id = w.id
   WHERE ${inFailingRun('w')} AND (w.failing_since IS NULL OR w.failing_since <= s.at)
   ORDER BY w.id`;

/**
 * Ends one endpoint's failing run if a success answered at `:at` ends it: the run began (its
 * first failed attempt started) no later. A run that began after the answer stands, so a failure
 * recorded since the SELECT above is judged again here.
 */
export const END_RUN = `UPDATE webhook_endpoints w SET consecutive_failures = 0, failing_since = NULL, failing_notice_sent_at = NULL
   WHERE w.id = :endpointId AND ${inFailingRun('w')} AND (w.failing_since IS NULL OR w.failing_since <= :at)`;

/**
 * The lowest feed position of an event whose delivery to the endpoint `endpointId` (a SQL
 * expression) still waits: pending or retrying (in flight counts: its claim leaves the status as it
 * was). Succeeded, failed and cancelled deliveries are done: acknowledged, or abandoned. With
 * `exceptDelivery`, that delivery is left out (the one being attempted). NULL when none waits, or
 * only events retention has removed. Read through webhook_deliveries_endpoint_status_idx
 * (endpoint, status; partial on status <> 'succeeded'), then each event's row by its key. The
 * safe-to-persist watermark of an MCP Events subscription's deliveries and refreshes
 * (docs/mcp.md, "Webhook mode") is just before it.
 */
export function lowestWaitingPosition(endpointId: string, exceptDelivery?: string): string {
  return (
    `(SELECT min(wait_o.feed_position) FROM webhook_deliveries wait_d JOIN outbox_events wait_o ON wait_o.id = wait_d.source_event_id` +
    ` WHERE wait_d.endpoint_id = ${endpointId} AND wait_d.status IN ('pending', 'retrying') AND wait_d.status <> 'succeeded'` +
    (exceptDelivery === undefined ? '' : ` AND wait_d.id <> ${exceptDelivery}`) +
    `)`
  );
}

/**
 * The org's newest feed position (outbox_events_feed_idx). Read in the statement's snapshot with
 * lowestWaitingPosition: every event at or below it has committed together with its deliveries
 * (fan-out runs in the transaction that numbers the events), so when nothing waits below it, every
 * delivery at or below it is done.
 */
export function feedHead(orgId: string): string {
  return `(SELECT max(head_o.feed_position) FROM outbox_events head_o WHERE head_o.org_id = ${orgId} AND head_o.feed_position IS NOT NULL)`;
}

/**
 * The safe-to-persist watermark of an MCP Events subscription whose endpoint is `endpointId`, in the
 * org `orgId` (SQL expressions): just before the lowest position whose delivery still waits
 * (lowestWaitingPosition, without `exceptDelivery`), else the feed's head (or the retention horizon,
 * if higher: a cursor there is not behind what retention deleted). Each delivery's body carries it
 * (the claim reads it) and so does a refresh's answer: one rule for both.
 */
export function subscriptionWatermark(endpointId: string, orgId: string, exceptDelivery?: string): string {
  return (
    `COALESCE(${lowestWaitingPosition(endpointId, exceptDelivery)} - 1,` +
    ` GREATEST(${feedHead(orgId)}, (SELECT wm_h.deleted_through FROM outbox_feed_horizon wm_h)))`
  );
}

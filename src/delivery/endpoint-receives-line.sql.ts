import { holdsLiveLine } from '../identity/line-access.sql';

/**
 * Whether the endpoint row `e` receives events on the line whose id is the SQL expression
 * `lineId`: its owner has a membership of the line, the line is live and of the endpoint's org
 * (line-access.sql.ts; an endpoint's org is its owner's), and the endpoint takes all lines or
 * names this one. The one rule behind fan-out (which endpoints an event goes to) and behind the
 * claim of each attempt (whether a delivery made then may still be sent now: access can end, and
 * the scope narrow, while it waits for a retry). Each row is found by its key.
 */
export function endpointReceivesLine(e: string, lineId: string): string {
  return (
    holdsLiveLine(`${e}.user_id`, e, lineId) +
    ` AND (${e}.all_channels OR EXISTS (SELECT 1 FROM webhook_endpoint_channels scope_c WHERE scope_c.endpoint_id = ${e}.id AND scope_c.line_id = ${lineId}))`
  );
}

/**
 * Why the feed refused a read, named once for every surface: the MCP endpoint answers each with
 * the draft's JSON-RPC code (McpService maps them), the HTTP feed with a status (EventFeedController).
 * `field` names the parameter at fault where one is.
 */
export type FeedRefusalKind = 'invalid' | 'not_found' | 'forbidden' | 'exhausted' | 'unsupported' | 'callback';

export class FeedRefusal extends Error {
  constructor(
    readonly kind: FeedRefusalKind,
    message: string,
    /** The draft's typed `data` (e.g. `{ kind: 'event' }`, `{ limit, max }`), with `field` where a parameter is at fault. */
    readonly data: Record<string, unknown> = {},
  ) {
    super(message);
  }

  static invalid(field: string, message: string): FeedRefusal {
    return new FeedRefusal('invalid', message, { field });
  }
}

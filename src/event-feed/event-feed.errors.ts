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

/**
 * The draft's error codes (design sketch, "Error Codes"): -32602 is JSON-RPC's InvalidParams, the
 * others the draft's own. Part of the events protocol, not only of MCP's JSON-RPC: a webhook-mode
 * `terminated` envelope carries one too.
 */
const DRAFT_CODES: Record<FeedRefusalKind, { code: number; name: string }> = {
  invalid: { code: -32602, name: 'InvalidParams' },
  not_found: { code: -32011, name: 'NotFound' },
  forbidden: { code: -32012, name: 'Forbidden' },
  exhausted: { code: -32013, name: 'ResourceExhausted' },
  unsupported: { code: -32014, name: 'Unsupported' },
  callback: { code: -32015, name: 'CallbackEndpointError' },
};

/** A refusal as the draft's error object: the code, the draft's name before the refusal's words, and its typed data with the words again as `detail`. */
export function draftErrorOf(refusal: FeedRefusal): { code: number; message: string; data: Record<string, unknown> } {
  const { code, name } = DRAFT_CODES[refusal.kind];
  return { code, message: `${name}: ${refusal.message}`, data: { ...refusal.data, detail: refusal.message } };
}

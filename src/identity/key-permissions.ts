/**
 * What an API key may do beside the lines it reaches (issue 16, least privilege): an allowlist of
 * kinds of tools, never more than the key's user may do (the role check stays). `read`: the tools
 * that only read messages, threads, contacts and lines; `send`: every other write (sends, replies,
 * contacts, labels, agent turns); `webhooks`: every webhook and delivery tool, reads included
 * (a webhook's configuration holds URLs and its deliveries the payloads sent there). Which tool
 * needs which is declared with the tool (ToolSpec.permission, tools/tool.decorator.ts).
 */
export const KEY_PERMISSIONS = ['read', 'send', 'draft', 'webhooks'] as const;
export type KeyPermission = (typeof KEY_PERMISSIONS)[number];

/**
 * A key created without permissions, and every key made before they existed, may read, send and
 * manage webhooks; a person acting on a page has the same. `draft` is never among them: it is the
 * narrower twin of `send` (issue 45, draft-only credentials), chosen in its place.
 */
export const ALL_KEY_PERMISSIONS: KeyPermission[] = ['read', 'send', 'webhooks'];

/**
 * Draft-only (issue 45): a credential with `draft` (never with `send`, keyPermissionsProblem)
 * calls send_sms, send_email and reply_to_thread, but each call is held as an agent turn awaiting
 * a person's approval instead of sending (docs/mcp.md, "Draft-only credentials").
 */
export function isDraftOnly(permissions: readonly KeyPermission[]): boolean {
  return permissions.includes('draft') && !permissions.includes('send');
}

export function isKeyPermission(value: unknown): value is KeyPermission {
  return typeof value === 'string' && (KEY_PERMISSIONS as readonly string[]).includes(value);
}

/** The permissions in their canonical order (read, send, draft, webhooks), each once: how they are stored and shown. */
export function canonicalPermissions(permissions: readonly KeyPermission[]): KeyPermission[] {
  return KEY_PERMISSIONS.filter((permission) => permissions.includes(permission));
}

/**
 * The one rule for a key's permissions, for the admin API's DTO and for Settings → API keys: a
 * non-empty list of known permissions, each once (a key that may do nothing is refused), never both
 * `send` and `draft` (a draft-only credential's sends wait for a person; with `send` they would not). Returns
 * what is wrong, as a message starting with `permissions`, or null.
 */
export function keyPermissionsProblem(value: unknown): string | null {
  if (!Array.isArray(value)) return `permissions must be a list of ${KEY_PERMISSIONS.join(', ')}`;
  if (value.length === 0) return `permissions must hold at least one of ${KEY_PERMISSIONS.join(', ')}: a key without any could call no tool`;
  const unknown = value.find((item) => !isKeyPermission(item));
  if (unknown !== undefined) return `permissions must each be one of ${KEY_PERMISSIONS.join(', ')}; ${JSON.stringify(unknown)} is not`;
  if (new Set(value).size !== value.length) return 'permissions must not contain duplicates';
  if (value.includes('send') && value.includes('draft')) {
    return 'permissions must not hold both send and draft: draft is the draft-only form of send (its sends wait for a person to approve them); choose one';
  }
  return null;
}

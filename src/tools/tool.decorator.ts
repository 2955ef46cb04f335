import { applyDecorators, Injectable, SetMetadata } from '@nestjs/common';
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import { UserRole } from '../identity/roles';
import { Principal } from '../identity/principal';
import { KeyPermission } from '../identity/key-permissions';

export const MCP_TOOL = 'mcp:tool';

/** The spec's Kind column: Read, Write or Destructive. */
export type ToolKind = 'read' | 'write' | 'destructive';

export type ObjectSchema = Exclude<JSONSchema, boolean> & { type: 'object' };

/**
 * The arguments a tool's handler receives: the type of what its input schema accepts (with
 * defaults filled in, as the registry's validator does), derived from the schema itself so the
 * two cannot drift. Declare the schema `as const`.
 */
export type ToolArgs<S extends JSONSchema> = FromSchema<S>;

/** Everything a tool declares once: it is both advertised by tools/list and enforced by tools/call. */
export interface ToolSpec {
  name: string;
  title: string;
  description: string;
  kind: ToolKind;
  /** Calling twice with the same arguments has no further effect (a second call may answer an error, but changes nothing). */
  idempotent?: boolean;
  /** A write that overwrites or clears what the caller cannot get back (a contact's fields, a drafted reply): advertised as destructive whatever its kind. */
  overwrites?: boolean;
  /** Reaches people or servers outside the service: sends a message, or POSTs (now or later) to a URL the caller gives. */
  openWorld?: boolean;
  /**
   * Top-level result fields given only in structuredContent: the text block (which hosts put in
   * the model's context) says where they are instead. For secrets an agent's program needs but
   * its model must not read (a prompt injection could make it repeat them).
   */
  withheldFromText?: string[];
  /** The lowest org role that may call the tool. */
  minRole: UserRole;
  /**
   * The one API key permission a call needs (identity/key-permissions.ts), besides minRole. Left out,
   * it follows the kind (toolPermission): a read tool needs `read`, any other `send`. Only the
   * webhook and delivery tools say it: `webhooks`, reads included (a webhook's configuration holds
   * its URL, its deliveries what was sent there).
   */
  permission?: KeyPermission;
  /**
   * A send tool a draft-only credential (permission `draft`, not `send`) may call too: its call is
   * held as a draft turn awaiting a person instead of sending (send_sms, send_email,
   * reply_to_thread; docs/mcp.md, "Draft-only credentials"). Only a tool needing `send` says it.
   */
  draftable?: boolean;
  inputSchema: ObjectSchema;
  outputSchema: ObjectSchema;
}

/** The permission a tool needs: its own `permission`, else `read` for a read tool and `send` for any other. */
export function toolPermission(spec: Pick<ToolSpec, 'kind' | 'permission'>): KeyPermission {
  return spec.permission ?? (spec.kind === 'read' ? 'read' : 'send');
}

/** The permissions any one of which lets a caller call the tool: its permission, and `draft` beside `send` for a draftable tool. */
export function toolPermissions(spec: Pick<ToolSpec, 'kind' | 'permission' | 'draftable'>): KeyPermission[] {
  const permission = toolPermission(spec);
  return permission === 'send' && spec.draftable ? ['send', 'draft'] : [permission];
}

/** What tools/list adds to a draftable tool's description for a draft-only caller: what its call does instead of sending. */
export const DRAFT_ONLY_NOTE =
  'This credential is draft-only: the call sends nothing. It answers { turn }: a turn AWAITING_APPROVAL holding the message as proposed ' +
  '(agent_turn.awaiting_approval); a person approves it (it is then sent, agent_turn.sent) or rejects it, maybe with a reason ' +
  '(agent_turn.rejected; get_agent_turn shows rejectionReason). idempotencyKey is not used.';

/** A tool: a thin handler that calls the owning service and returns a JSON object. */
export interface McpToolHandler<Args = Record<string, unknown>, Result extends object = object> {
  execute(args: Args, caller: Principal): Promise<Result>;
}

/** Marks a provider as an MCP tool; the mcp module discovers it. */
export function McpTool(spec: ToolSpec): ClassDecorator {
  return applyDecorators(Injectable(), SetMetadata(MCP_TOOL, spec));
}

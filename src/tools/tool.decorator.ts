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
  inputSchema: ObjectSchema;
  outputSchema: ObjectSchema;
}

/** The permission a tool needs: its own `permission`, else `read` for a read tool and `send` for any other. */
export function toolPermission(spec: Pick<ToolSpec, 'kind' | 'permission'>): KeyPermission {
  return spec.permission ?? (spec.kind === 'read' ? 'read' : 'send');
}

/** A tool: a thin handler that calls the owning service and returns a JSON object. */
export interface McpToolHandler<Args = Record<string, unknown>, Result extends object = object> {
  execute(args: Args, caller: Principal): Promise<Result>;
}

/** Marks a provider as an MCP tool; the mcp module discovers it. */
export function McpTool(spec: ToolSpec): ClassDecorator {
  return applyDecorators(Injectable(), SetMetadata(MCP_TOOL, spec));
}

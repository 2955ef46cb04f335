import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { isGrantId, Principal } from '../identity/principal';
import { isDraftOnly, KeyPermission } from '../identity/key-permissions';
import { roleAtLeast } from '../identity/roles';
import { argumentValidator } from '../tools/tool-arguments';
import { DRAFT_ONLY_NOTE, MCP_TOOL, McpToolHandler, toolPermission, toolPermissions, ToolSpec } from '../tools/tool.decorator';
import { portableSchema } from './portable-schema';

export interface RegisteredTool {
  spec: ToolSpec;
  /** The API key permission a call needs (toolPermission). */
  permission: KeyPermission;
  /** What tools/list shows: the portable form of spec.inputSchema (portable-schema.ts); arguments are validated with the full one. */
  advertised: ToolDescriptor;
  handler: McpToolHandler;
  validate: ValidateFunction;
  /** Checks a result, as the client will read it (after JSON), against the output schema. */
  validateResult: ValidateFunction;
}

/** The advertised form of a tool (MCP `Tool`). */
export interface ToolDescriptor {
  name: string;
  title: string;
  description: string;
  inputSchema: object;
  outputSchema: object;
  annotations: { title: string; readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint: boolean };
}

/** Finds every provider marked @McpTool and compiles its input schema once. */
@Injectable()
export class ToolRegistry implements OnModuleInit {
  private readonly tools = new Map<string, RegisteredTool>();
  /** Arguments are judged as every surface judges them (tools/tool-arguments.ts). */
  private readonly ajv = argumentValidator();
  /** Results are checked, never changed: no defaults filled in. */
  private readonly resultAjv = new Ajv({ allErrors: false, strict: true, coerceTypes: false });

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
  ) {
    addFormats(this.resultAjv);
  }

  onModuleInit(): void {
    for (const wrapper of this.discovery.getProviders()) {
      if (!wrapper.metatype || !wrapper.instance) continue;
      const spec = this.reflector.get<ToolSpec | undefined>(MCP_TOOL, wrapper.metatype);
      if (!spec) continue;
      if (this.tools.has(spec.name)) throw new Error(`two MCP tools are named ${spec.name}`);
      this.tools.set(spec.name, {
        spec,
        permission: toolPermission(spec),
        advertised: describe(spec),
        handler: wrapper.instance as McpToolHandler,
        validate: this.ajv.compile(spec.inputSchema),
        validateResult: this.resultAjv.compile(spec.outputSchema),
      });
    }
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  /**
   * The tools the caller may call (its role and its key's permissions), in a stable order. To a
   * draft-only caller a draftable tool says what its call does instead (DRAFT_ONLY_NOTE) and is
   * not open-world (it reaches no one by itself).
   */
  listFor(caller: Pick<Principal, 'role' | 'permissions'>): ToolDescriptor[] {
    const drafting = isDraftOnly(caller.permissions);
    return [...this.tools.values()]
      .filter((tool) => refusal(tool, caller) === null)
      .sort((a, b) => a.spec.name.localeCompare(b.spec.name))
      .map((tool) => (drafting && tool.spec.draftable ? asDraft(tool.advertised) : tool.advertised));
  }
}

/**
 * Why the caller may not call the tool, or null when it may: the one rule behind both tools/list
 * (which leaves the tool out) and tools/call (which answers this as a tool error). The role first,
 * then the key's permissions: a permission never lifts what the role forbids.
 */
export function refusal(
  tool: Pick<RegisteredTool, 'spec' | 'permission'>,
  caller: Pick<Principal, 'role' | 'permissions'> & { keyId?: string | null },
): string | null {
  const { name, minRole } = tool.spec;
  const app = typeof caller.keyId === 'string' && isGrantId(caller.keyId); // an OAuth grant: the person connected an app, never saw a key
  if (!roleAtLeast(caller.role, minRole)) return `${name} needs the ${minRole} role or higher; ${app ? 'this app' : 'this key'} acts as a ${caller.role}`;
  const permissions = toolPermissions(tool.spec); // `draft` beside `send` for a draftable send tool
  if (!permissions.some((permission) => caller.permissions.includes(permission))) {
    const lacks = app ? 'which this app was not granted' : 'which this API key does not have';
    return `${name} needs the ${permissions.join(' or ')} permission, ${lacks} (it has ${caller.permissions.join(', ')})`;
  }
  return null;
}

/** A draftable send tool as a draft-only caller sees it. */
function asDraft(tool: ToolDescriptor): ToolDescriptor {
  return {
    ...tool,
    description: `${tool.description} ${DRAFT_ONLY_NOTE}`,
    annotations: { ...tool.annotations, title: `${tool.annotations.title} (as a draft)`, openWorldHint: false, destructiveHint: false },
  };
}

function describe(spec: ToolSpec): ToolDescriptor {
  const annotations: ToolDescriptor['annotations'] = { title: spec.title, readOnlyHint: spec.kind === 'read', openWorldHint: spec.openWorld === true };
  if (spec.kind !== 'read') annotations.destructiveHint = spec.kind === 'destructive' || spec.overwrites === true;
  if (spec.idempotent) annotations.idempotentHint = true;
  return {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema: portableSchema(spec.inputSchema),
    outputSchema: spec.outputSchema,
    annotations,
  };
}

/** Where a result strays from its output schema, e.g. `/endpoint/status must be equal to one of the allowed values`. */
export function describeResultError(error: ErrorObject | undefined): string {
  if (!error) return 'the result is invalid';
  return `${error.instancePath || '(the result)'} ${error.message ?? 'is invalid'}${error.keyword === 'additionalProperties' ? `: ${String(error.params.additionalProperty)}` : ''}`;
}

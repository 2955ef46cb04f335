import { Injectable } from '@nestjs/common';
import { ValidationError } from '../../common/errors';
import { describeArgumentError, ToolRegistry } from '../../mcp/tool-registry';

/**
 * The pages check what a form asks for with the MCP tool's own argument validator (its JSON
 * Schema, compiled once by the ToolRegistry), so a page accepts exactly what the tool accepts and
 * no rule is written twice. A refusal is a ValidationError with the tool's message and the
 * argument at fault as its field, which the page shows next to that field.
 */
@Injectable()
export class ToolArguments {
  constructor(private readonly tools: ToolRegistry) {}

  check<T>(toolName: string, args: Record<string, unknown>): T {
    const tool = this.tools.get(toolName);
    if (!tool) throw new Error(`no MCP tool named ${toolName}`);
    if (!tool.validate(args)) {
      const error = tool.validate.errors?.[0];
      const path = error?.instancePath.split('/')[1] ?? '';
      const field = path || (error?.keyword === 'required' ? String(error.params.missingProperty) : undefined);
      throw new ValidationError(describeArgumentError(error), field);
    }
    return args as T;
  }
}

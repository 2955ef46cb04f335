import Ajv, { ErrorObject, ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { isEmailAddress } from '../common/email-address';
import { ValidationError } from '../common/errors';
import { UUID_PATTERN } from '../common/uuid';
import { ObjectSchema, ToolArgs } from './tool.decorator';

/**
 * The validator tool arguments are judged with: defaults filled in, no type coercion, schemas
 * held to strict JSON Schema. The MCP registry compiles every tool's input schema with it, and a
 * feature's argument checks (argumentCheck) use it too, so a page accepts exactly what the tool does.
 */
export function argumentValidator(): Ajv {
  const ajv = new Ajv({ allErrors: false, useDefaults: true, strict: true, coerceTypes: false });
  addFormats(ajv);
  // The one id rule and the one email rule (common/uuid.ts, common/email-address.ts) in place of
  // ajv-formats' own: its uuid takes a `urn:uuid:` prefix PostgreSQL does not, its email differs from the DTOs'.
  ajv.addFormat('uuid', UUID_PATTERN);
  ajv.addFormat('email', { validate: (value: string) => isEmailAddress(value) });
  return ajv;
}

/** One sentence naming the argument at fault, e.g. `channelScope.channels[0].channelId must be string`. */
export function describeArgumentError(error: ErrorObject | undefined): string {
  if (!error) return 'arguments are invalid';
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '');
  const at = (name: string) => (path ? `${path}.${name}` : name);
  switch (error.keyword) {
    case 'required':
      return `${at(String(error.params.missingProperty))} is required`;
    case 'additionalProperties':
      return `${at(String(error.params.additionalProperty))} is not a known argument`;
    case 'enum':
      return `${path || 'argument'} must be one of ${(error.params.allowedValues as unknown[]).join(', ')}`;
    case 'uniqueItems':
      return `${path} must not contain duplicates`;
    default:
      return `${path || 'arguments'} ${error.message ?? 'is invalid'}`;
  }
}

let shared: Ajv | undefined;

/**
 * A check of arguments against a tool's input schema, for a surface other than the MCP endpoint
 * (a page's form): it answers the arguments as the tool's handler receives them, or throws a
 * ValidationError with the tool's message and the top-level argument at fault as its field. The
 * schema is compiled on first use.
 */
export function argumentCheck<S extends ObjectSchema>(schema: S): (args: Record<string, unknown>) => ToolArgs<S>;
export function argumentCheck(schema: ObjectSchema): (args: Record<string, unknown>) => unknown {
  let validate: ValidateFunction | undefined;
  return (args) => {
    validate ??= (shared ??= argumentValidator()).compile(schema);
    if (!validate(args)) {
      const error = validate.errors?.[0];
      const path = error?.instancePath.split('/')[1] ?? '';
      const field = path || (error?.keyword === 'required' ? String(error.params.missingProperty) : undefined);
      throw new ValidationError(describeArgumentError(error), field);
    }
    return args;
  };
}

import { ObjectSchema } from './tool.decorator';

/** Schema pieces many tools share, declared once. */
export const noArguments: ObjectSchema = { type: 'object', properties: {}, additionalProperties: false };

/** The `cursor` argument of a paged list tool. */
export const cursorArgument = {
  type: 'string',
  minLength: 1,
  maxLength: 2048,
  description: 'nextCursor from the previous page.',
} as const;

/**
 * `schema` or null, spelled as `anyOf` branches of one type each rather than `type: [..., "null"]`:
 * legal either way, but clients that map tool schemas onto a single-type dialect (Gemini's
 * function declarations, OpenAPI subsets) reject or drop the array form (MCP Inspector --strict).
 */
export function nullable<S extends object>(schema: S): { readonly anyOf: readonly [S, { readonly type: 'null' }] };
export function nullable<S extends object, D extends string>(
  schema: S,
  description: D,
): { readonly description: D; readonly anyOf: readonly [S, { readonly type: 'null' }] };
export function nullable(schema: object, description?: string): object {
  return description === undefined ? { anyOf: [schema, { type: 'null' }] } : { description, anyOf: [schema, { type: 'null' }] };
}

/** A string or null. */
export const nullableString = nullable({ type: 'string' } as const);

/** The `nextCursor` of a paged list result: null on the last page. */
export const nextCursorResult = nullable({ type: 'string' } as const, 'Pass as cursor for the next page; null on the last page.');

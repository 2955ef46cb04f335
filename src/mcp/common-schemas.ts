import { ObjectSchema } from './mcp-tool.decorator';

/** Schema pieces many tools share, declared once. */
export const noArguments: ObjectSchema = { type: 'object', properties: {}, additionalProperties: false };

/** The `cursor` argument of a paged list tool. */
export const cursorArgument = {
  type: 'string',
  minLength: 1,
  maxLength: 2048,
  description: 'nextCursor from the previous page.',
} as const;

/** The `nextCursor` of a paged list result: null on the last page. */
export const nextCursorResult = { type: ['string', 'null'] } as const;

import fc from 'fast-check';
import { hostileString } from './hostile-input';

/**
 * A fast-check arbitrary for JSON-Schema-described tool arguments that is mostly right and often
 * a little wrong: valid shapes with known ids (so calls reach the handlers), mixed with wrong
 * types, values out of range, unknown properties, missing required ones and odd strings.
 */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  pattern?: string;
}

export interface Hints {
  /** Ids that exist (the caller's own and other people's), used for uuid-formatted strings. */
  ids: string[];
  /** Plausible values by property name (urls, phone numbers, emails, cursors). */
  byName: Record<string, unknown[]>;
}

const oddStrings = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '💥',
    'a'.repeat(5000),
    '../../etc/passwd',
    "' OR 1=1 --",
    '<script>',
    '%00',
    '\n',
    'null',
    '-1',
    '1e309',
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    '__proto__',
    'constructor',
  ),
  // U+0000 and lone surrogates (issue 10, §4), as often as all the rest together.
  hostileString,
);

/** Property names for unknown properties: random, and now and then one holding U+0000 or a lone surrogate. */
const extraKey = fc.oneof({ arbitrary: fc.string({ maxLength: 8 }), weight: 4 }, { arbitrary: hostileString, weight: 1 });

const anyJson = fc.jsonValue({ maxDepth: 3 });

function wrongType(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.string(),
    fc.array(fc.integer(), { maxLength: 3 }),
    fc.object({ maxDepth: 1 }),
  );
}

export function arbitraryFor(schema: JsonSchema, hints: Hints, name = ''): fc.Arbitrary<unknown> {
  const right = rightValue(schema, hints, name);
  return fc.oneof({ arbitrary: right, weight: 8 }, { arbitrary: wrongType(), weight: 1 }, { arbitrary: oddStrings, weight: 1 });
}

function rightValue(schema: JsonSchema, hints: Hints, name: string): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.oneof({ arbitrary: fc.constantFrom(...schema.enum), weight: 9 }, { arbitrary: fc.string({ maxLength: 12 }), weight: 1 });
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants?.length) return fc.oneof(...variants.map((v) => rightValue(v, hints, name)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const named = hints.byName[name];
  switch (type) {
    case 'string': {
      const options: Array<fc.WeightedArbitrary<unknown>> = [
        { arbitrary: fc.string({ maxLength: schema.maxLength ? Math.min(schema.maxLength + 2, 300) : 60 }), weight: 2 },
      ];
      if (schema.format === 'uuid' || /id$/i.test(name))
        options.push({ arbitrary: fc.constantFrom(...hints.ids), weight: 6 }, { arbitrary: fc.uuid(), weight: 2 });
      if (named?.length) options.push({ arbitrary: fc.constantFrom(...named), weight: 6 });
      if (schema.format === 'email') options.push({ arbitrary: fc.emailAddress(), weight: 3 });
      return fc.oneof(...options);
    }
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? -1000;
      const max = schema.maximum ?? 1000;
      return fc.oneof(
        { arbitrary: fc.integer({ min, max }), weight: 6 },
        { arbitrary: fc.constantFrom(min - 1, max + 1, 0, -1, 2 ** 31, Number.MAX_SAFE_INTEGER), weight: 2 },
        { arbitrary: fc.double({ noNaN: true }), weight: 1 },
      );
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const item = schema.items ? arbitraryFor(schema.items, hints, name.replace(/s$/, '')) : anyJson;
      return fc.array(item, { minLength: 0, maxLength: Math.min(schema.maxItems ?? 4, 4) });
    }
    case 'object':
      return objectFor(schema, hints);
    default:
      return anyJson;
  }
}

export function objectFor(schema: JsonSchema, hints: Hints): fc.Arbitrary<Record<string, unknown>> {
  const properties = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const fields = properties.map(([key, sub]) =>
    fc.tuple(
      fc.constant(key),
      // Required fields are mostly present, optional ones half the time.
      fc.integer({ min: 0, max: 9 }).map((n) => (required.has(key) ? n < 9 : n < 5)),
      arbitraryFor(sub, hints, key),
    ),
  );
  return fc.tuple(fc.tuple(...fields), fc.option(fc.dictionary(extraKey, anyJson, { maxKeys: 2 }), { freq: 8 })).map(([entries, extra]) => {
    const out: Record<string, unknown> = {};
    for (const [key, present, value] of entries as Array<[string, boolean, unknown]>) if (present) out[key] = value;
    if (extra) Object.assign(out, extra);
    return out;
  });
}

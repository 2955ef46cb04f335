import { EVENT_KINDS } from '../events/event-kinds';
import { JsonSchema, PAYLOAD_MODES, payloadSchema } from './event-schemas';

/**
 * The rule that the catalog evolves additively (docs/webhooks.md, "How the schemas evolve"): a
 * change may add event kinds and optional fields; it may never remove or rename a field or a
 * kind, change a field's type, format, pattern, enum, const or limits, or make a field required
 * that was not. `nonAdditiveChanges` lists every breach between two catalogs; the committed
 * snapshot (schemas.snapshot.json) is the catalog as receivers know it.
 */

export type Catalog = Record<string, JsonSchema>;

/** The snapshot's base URL; `$id`s are not compared. */
const SNAPSHOT_BASE_URL = 'https://sync.example.com';

/** The current catalog: `<kind>.<mode>` → the schema of the whole body. */
export function currentCatalog(): Catalog {
  return Object.fromEntries(EVENT_KINDS.flatMap((kind) => PAYLOAD_MODES.map((mode) => [`${kind}.${mode}`, payloadSchema(kind, mode, SNAPSHOT_BASE_URL)])));
}

/** Keywords that constrain a value: any change to them changes what receivers get. */
const FIXED = ['const', 'enum', 'format', 'pattern', 'maxLength', 'minLength', 'maxItems', 'minItems', 'minimum', 'maximum', 'if', 'then', 'else', 'not'];

export function nonAdditiveChanges(before: Catalog, after: Catalog): string[] {
  const problems: string[] = [];
  for (const [name, old] of Object.entries(before)) {
    const current = after[name];
    if (!current) problems.push(`${name}: removed (an event kind or mode may never be removed)`);
    else compare(old, current, name, defsOf(old), defsOf(current), problems);
  }
  return problems;
}

function defsOf(document: JsonSchema): Record<string, JsonSchema> {
  return (document.$defs ?? {}) as Record<string, JsonSchema>;
}

function resolve(schema: JsonSchema, defs: Record<string, JsonSchema>): JsonSchema {
  const ref = schema.$ref;
  if (typeof ref !== 'string' || !ref.startsWith('#/$defs/')) return schema;
  const { $ref: _ref, ...siblings } = schema;
  return { ...resolve(defs[ref.slice('#/$defs/'.length)] ?? {}, defs), ...siblings };
}

const types = (schema: JsonSchema): string =>
  ([] as unknown[])
    .concat(schema.type ?? [])
    .map(String)
    .sort()
    .join(' or ');
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

function compare(
  oldRaw: JsonSchema,
  newRaw: JsonSchema,
  path: string,
  oldDefs: Record<string, JsonSchema>,
  newDefs: Record<string, JsonSchema>,
  problems: string[],
): void {
  const old = resolve(oldRaw, oldDefs);
  const now = resolve(newRaw, newDefs);
  if (types(old) !== types(now)) problems.push(`${path}: type changed from ${types(old) || 'any'} to ${types(now) || 'any'}`);
  for (const keyword of FIXED) {
    if (!same(old[keyword], now[keyword])) problems.push(`${path}: ${keyword} changed from ${JSON.stringify(old[keyword])} to ${JSON.stringify(now[keyword])}`);
  }
  const oldRequired = new Set((old.required ?? []) as string[]);
  const newRequired = new Set((now.required ?? []) as string[]);
  for (const name of newRequired) if (!oldRequired.has(name)) problems.push(`${path}.${name}: newly required`);
  for (const name of oldRequired) if (!newRequired.has(name)) problems.push(`${path}.${name}: no longer always present`);
  const oldProperties = (old.properties ?? {}) as Record<string, JsonSchema>;
  const newProperties = (now.properties ?? {}) as Record<string, JsonSchema>;
  for (const [name, schema] of Object.entries(oldProperties)) {
    if (!newProperties[name]) problems.push(`${path}.${name}: removed or renamed`);
    else compare(schema, newProperties[name], `${path}.${name}`, oldDefs, newDefs, problems);
  }
  for (const keyword of ['items', 'additionalProperties'] as const) {
    const before = old[keyword];
    const after = now[keyword];
    if (before && typeof before === 'object') {
      if (after && typeof after === 'object')
        compare(before as JsonSchema, after as JsonSchema, `${path}${keyword === 'items' ? '[]' : '{}'}`, oldDefs, newDefs, problems);
      else problems.push(`${path}: ${keyword} removed`);
    }
  }
}

/**
 * The input schema a tool advertises, in the subset of JSON Schema every major LLM client accepts
 * (docs/mcp.md, "Schemas every client accepts"). OpenAI's strict function calling and Gemini's
 * function declarations refuse some keywords: `type` arrays (`["string", "null"]`), `format`
 * other than `date-time`, `default`, `uniqueItems`, and `properties: {}`. Each is moved into the
 * description (or, for a type array, said with anyOf), so the model still reads the rule, and the
 * server keeps validating arguments with the tool's full schema: nothing the advertised schema
 * leaves out is accepted.
 */

type Schema = Record<string, unknown>;

/** Format names as a model reads them. */
const FORMAT_WORDS: Record<string, string> = { uuid: 'a UUID', email: 'an email address', uri: 'an absolute URL', date: 'a date (YYYY-MM-DD)' };

export function portableSchema(schema: Schema): Schema {
  const out: Schema = {};
  const notes: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'format' && value !== 'date-time') {
      notes.push(`Format: ${FORMAT_WORDS[value as string] ?? (value as string)}.`);
    } else if (key === 'default') {
      notes.push(`Default: ${JSON.stringify(value)}.`);
    } else if (key === 'uniqueItems') {
      if (value === true) notes.push('No item may appear twice.');
    } else if (key === 'properties') {
      const entries = Object.entries(value as Record<string, Schema>);
      if (entries.length > 0) out.properties = Object.fromEntries(entries.map(([name, inner]) => [name, portableSchema(inner)]));
    } else if (key === 'items' && isSchema(value)) {
      out.items = portableSchema(value);
    } else if ((key === 'anyOf' || key === 'oneOf' || key === 'allOf') && Array.isArray(value)) {
      out[key] = value.map((inner: Schema) => portableSchema(inner));
    } else if (key === 'type' && Array.isArray(value)) {
      out.anyOf = value.map((type: string) => ({ type }));
    } else {
      out[key] = value;
    }
  }
  if (notes.length > 0) out.description = [out.description, ...notes].filter(Boolean).join(' ');
  return out;
}

/** Where a schema uses a keyword some client refuses, as `path: keyword`; empty when it is portable. */
export function nonPortableKeywords(schema: unknown, path = ''): string[] {
  if (!isSchema(schema)) return [];
  const found: string[] = [];
  if (Array.isArray(schema.type)) found.push(`${path || '/'}: type array`);
  if ('format' in schema && schema.format !== 'date-time') found.push(`${path || '/'}: format ${String(schema.format)}`);
  if ('default' in schema) found.push(`${path || '/'}: default`);
  if ('uniqueItems' in schema) found.push(`${path || '/'}: uniqueItems`);
  if ('properties' in schema && Object.keys(schema.properties as object).length === 0) found.push(`${path || '/'}: empty properties`);
  for (const [name, inner] of Object.entries((schema.properties as Record<string, unknown>) ?? {}))
    found.push(...nonPortableKeywords(inner, `${path}/${name}`));
  if (schema.items) found.push(...nonPortableKeywords(schema.items, `${path}/items`));
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const list = schema[key];
    if (Array.isArray(list)) list.forEach((inner, i) => found.push(...nonPortableKeywords(inner, `${path}/${key}/${i}`)));
  }
  return found;
}

/**
 * The properties (at any depth, as `/path`) that a model would have to guess at: declared without
 * a description of their own. Checked on the declared schema, before portableSchema adds its
 * format and default notes, so a bare `{format: 'uuid'}` counts as undescribed.
 */
export function undescribedProperties(schema: unknown, path = ''): string[] {
  if (!isSchema(schema)) return [];
  const found: string[] = [];
  for (const [name, inner] of Object.entries((schema.properties as Record<string, unknown>) ?? {})) {
    const described = isSchema(inner) && typeof inner.description === 'string' && inner.description.trim() !== '';
    if (!described) found.push(`${path}/${name}`);
    found.push(...undescribedProperties(inner, `${path}/${name}`));
  }
  if (schema.items) found.push(...undescribedProperties(schema.items, `${path}/items`));
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const list = schema[key];
    if (Array.isArray(list)) list.forEach((inner, i) => found.push(...undescribedProperties(inner, `${path}/${key}/${i}`)));
  }
  return found;
}

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

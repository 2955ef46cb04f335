/**
 * How deep arrays and objects may nest in a JSON request body (`{"a":[1]}` nests 2 deep). Real
 * requests nest a handful of levels; 64 leaves room for any tool argument while keeping every
 * recursive step after parsing (class-transformer, ajv, JSON.stringify, logging) far from the
 * stack limit. V8's JSON.parse itself is iterative and accepts any depth, so the limit has to be
 * checked before the body is parsed, and it is: for REST bodies and for the MCP endpoint alike.
 */
export const MAX_JSON_DEPTH = 64;

export const JSON_TOO_DEEP_MESSAGE = `the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * True when the JSON text opens more than `max` arrays or objects at once. One pass over the
 * bytes, brackets inside strings ignored; it never recurses and never parses. The characters it
 * looks at are ASCII, which in UTF-8 never occur inside a multi-byte sequence, so the bytes of a
 * Buffer can be scanned as they are. It works on invalid JSON too (what JSON.parse would nest).
 */
export function exceedsJsonDepth(input: Buffer | string, max = MAX_JSON_DEPTH): boolean {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

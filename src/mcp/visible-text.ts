/**
 * What MCP tools return to agents holds only characters a person reading the same text would see.
 *
 * Message bodies, subjects, names, filenames and attachment text are written by anyone. Invisible
 * characters in them reach a model as if they were visible: Unicode tag characters (U+E0000 to
 * U+E007F) spell ASCII a model reads but no screen shows ("ASCII smuggling"), a run of variation
 * selectors after one character can encode any bytes, zero-width characters split words so that
 * filters miss them, and bidirectional controls make text display in another order than the one it
 * is read in (the "Trojan Source" trick), so a person checking what an agent saw or quotes is misled.
 * These characters are removed, not marked: a mark would show the model nothing it can act on, and
 * spelling out the hidden characters would hand it the smuggled text.
 *
 * Removed: control characters other than TAB, LF and CR (C0, DEL, C1); format characters
 * (general category Cf: bidi embeddings, overrides, isolates and marks, zero-width space, word
 * joiner, invisible operators, BOM, soft hyphen, tags...); and every other default-ignorable code
 * point (Hangul fillers, the combining grapheme joiner, variation selectors...). Unicode's own
 * properties decide, through the property escapes of Node's regular expressions, so the rule
 * follows the Unicode version Node ships instead of a list kept by hand.
 *
 * Kept, because text needs them and they hide nothing:
 * - the prepended concatenation marks (U+0600 to U+0605, U+06DD, U+070F, U+0890, U+0891, U+08E2,
 *   U+110BD, U+110CD): format characters that are drawn (the Arabic number sign and the like);
 * - a zero-width joiner or non-joiner between two non-ASCII letters, marks or emoji: emoji ZWJ
 *   sequences (woman ZWJ laptop: technologist), Persian and other Arabic-script words, Indic conjuncts. Anywhere
 *   else (next to ASCII, at either end of a string, next to another invisible character) it is
 *   removed, so it cannot split an English word or form runs that encode bits;
 * - one variation selector right after the character it selects a form of: U+FE0E or U+FE0F after
 *   an emoji character (a red heart, a keycap), any other selector after a non-ASCII letter (CJK ideographic
 *   variants, Mongolian). A second selector in a row, or one after anything else, is removed;
 * - the tag characters of the three subdivision flags Unicode recommends (England, Scotland, Wales:
 *   U+1F3F4 + the tags of gbeng, gbsct or gbwls + cancel tag), whole. Other tag sequences are removed.
 *
 * Everything else is unchanged: letters of every script, emoji, spaces, TAB, LF, CR, U+2028/U+2029.
 * Strings the service mints (ids, cursors, URLs, secrets, timestamps) are ASCII, so they pass
 * through untouched.
 */

/**
 * A character that may be removed: a control character other than TAB, LF, CR; a format character
 * that is not a prepended concatenation mark; any other default-ignorable code point.
 */
const HIDDEN = String.raw`(?![\t\n\r\u0600-\u0605\u06DD\u070F\u0890\u0891\u08E2\u{110BD}\u{110CD}])[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]`;

/** U+1F3F4 (black flag) then the tags of "gbeng", "gbsct" or "gbwls", then CANCEL TAG: the recommended subdivision flags. */
const TAG_FLAG = String.raw`\u{1F3F4}\u{E0067}\u{E0062}(?:\u{E0065}\u{E006E}\u{E0067}|\u{E0073}\u{E0063}\u{E0074}|\u{E0077}\u{E006C}\u{E0073})\u{E007F}`;

const ANY_HIDDEN = new RegExp(HIDDEN, 'u');
const HIDDEN_OR_FLAG = new RegExp(`${TAG_FLAG}|${HIDDEN}`, 'gu');

const ZWNJ = 0x200c;
const ZWJ = 0x200d;
const BLACK_FLAG = 0x1f3f4;

const VARIATION_SELECTOR = /\p{Variation_Selector}/u;
const EMOJI = /\p{Emoji}/u;
const LETTER = /\p{L}/u;
/** What a joiner may stand beside: letters, marks (a virama, an emoji's variation selector), emoji and skin tones. */
const JOINABLE = /[\p{L}\p{M}\p{Extended_Pictographic}\p{Emoji_Modifier}]/u;
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;

/** The text with the characters described above removed; the same string when there are none. */
export function visibleText(text: string): string {
  if (!ANY_HIDDEN.test(text)) return text;
  let out = '';
  let copied = 0;
  /** The last code point kept, which the next one will follow in the answer. */
  let previous: number | undefined;
  for (const match of text.matchAll(HIDDEN_OR_FLAG)) {
    const at = match.index;
    const found = match[0];
    if (at > copied) previous = codePointBefore(text, at);
    const code = found.codePointAt(0)!;
    const kept = code === BLACK_FLAG || keeps(code, previous, text.codePointAt(at + found.length));
    out += text.slice(copied, at);
    if (kept) {
      out += found;
      previous = codePointBefore(found, found.length);
    }
    copied = at + found.length;
  }
  return out + text.slice(copied);
}

/**
 * JSON.stringify(value) with every string made visible (visibleText), property names included (a
 * label name is a key of labelConfidence). Should two names become equal, the later one wins.
 */
export function visibleJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item === 'string') return visibleText(item);
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return item;
    const entries = Object.entries(item);
    if (entries.every(([name]) => visibleText(name) === name)) return item;
    return Object.fromEntries(entries.map(([name, inner]) => [visibleText(name), inner]));
  });
}

/**
 * JSON.stringify writes C0 controls as escapes (`\b`, `\f`, `\u00XX`), so a scan of JSON text for
 * hidden characters also looks for those. A literal backslash before such letters matches too; that
 * only sends the value down the full pass, which is right either way.
 */
const ESCAPED_CONTROL = /\\(?:[bf]|u00[01])/;

/** Any character but printable ASCII: where a hidden character could be (they are all controls, escaped in JSON, or beyond ASCII). */
const BEYOND_PRINTABLE_ASCII = /[^\x20-\x7e]/;

/**
 * A tool result as the JSON text an agent reads, and the value it stands for. Most results hold no
 * hidden character: one stringify and one scan of the text, and the value is the result itself.
 * Otherwise visibleJson cleans every string, and the value is read back from the clean text.
 */
export function visibleResult(value: object): { json: string; value: object } {
  const json = JSON.stringify(value);
  // Printable ASCII alone (most results) is a simple scan; the Unicode properties only for the rest.
  const clean = BEYOND_PRINTABLE_ASCII.test(json) ? !ANY_HIDDEN.test(json) : true;
  if (clean && !ESCAPED_CONTROL.test(json)) return { json, value };
  const visible = visibleJson(value);
  return { json: visible, value: JSON.parse(visible) as object };
}

/** Whether a joiner or a variation selector stays, given the code point kept before it and the one after it. */
function keeps(code: number, previous: number | undefined, next: number | undefined): boolean {
  if (previous === undefined) return false;
  if (code === ZWJ || code === ZWNJ) return (joinable(previous) || is(VARIATION_SELECTOR, previous)) && next !== undefined && joinable(next);
  if (!is(VARIATION_SELECTOR, code) || is(VARIATION_SELECTOR, previous)) return false;
  return code === 0xfe0e || code === 0xfe0f ? is(EMOJI, previous) : previous > 0x7f && is(LETTER, previous);
}

function joinable(code: number): boolean {
  return code > 0x7f && is(JOINABLE, code) && !is(IGNORABLE, code);
}

function is(property: RegExp, code: number): boolean {
  return property.test(String.fromCodePoint(code));
}

/** The code point that ends just before `end` (a surrogate pair counts as one). */
function codePointBefore(text: string, end: number): number {
  const last = text.charCodeAt(end - 1);
  if (last >= 0xdc00 && last <= 0xdfff && end >= 2) {
    const high = text.charCodeAt(end - 2);
    if (high >= 0xd800 && high <= 0xdbff) return text.codePointAt(end - 2)!;
  }
  return last;
}

/**
 * The text an extraction hands back: normalised and cut at the character limit. It runs inside the
 * extraction thread, so no more than the limit ever crosses back to the process.
 */
export function finishText(text: string, maxChars: number): string {
  return clip(normalize(text), maxChars);
}

/** Line ends as `\n`, no NUL or other control characters (PostgreSQL text refuses NUL), no trailing blanks. */
export function normalize(text: string): string {
  return (
    text
      .replace(/\r\n?/g, '\n')
      // Control characters are what this removes: the regex names them on purpose.
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '')
      .replace(/[ \t]+$/gm, '')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
  );
}

/** At most `max` characters (code points), never splitting a surrogate pair. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text; // fewer UTF-16 units than max means fewer code points too
  let units = 0;
  let points = 0;
  while (units < text.length && points < max) {
    units += text.codePointAt(units)! > 0xffff ? 2 : 1;
    points += 1;
  }
  return text.slice(0, units);
}

/** Characters (code points) of a string, as PostgreSQL's char_length counts them. */
export function characterCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

import { compile } from 'html-to-text';
import { Parser } from 'htmlparser2';

/**
 * Deepest element nesting converted. htmlparser2 (the parser under html-to-text) keeps its open
 * elements at the front of an array, so parsing alone is quadratic in the nesting depth (2 MB of
 * unclosed `<b>` ran for minutes), and html-to-text's recursive walk overflows the stack at about
 * 2,000 levels. Real markup stays far below (browsers flatten anything deeper than 512 levels;
 * nested layout tables of newsletters reach a few dozen), and each element costs the parser up to
 * this many steps, so it is kept well under both.
 */
export const MAX_HTML_DEPTH = 256;

/**
 * Characters of HTML read; the rest is ignored. An inbound email is at most 25 MiB
 * (EMAIL_INBOUND_MAX_BYTES), so a base64 HTML part decodes to less than 19 MiB: only a file of
 * nearly the largest size loses its tail, and its text would be cut at 1,000,000 characters anyway.
 */
export const MAX_HTML_INPUT_CHARS = 16 * 1024 * 1024;

/** HTML nested deeper than MAX_HTML_DEPTH: refused before it is converted. */
export class HtmlTooDeepError extends Error {
  override name = 'HtmlTooDeepError';

  constructor() {
    super(`the HTML nests elements more than ${MAX_HTML_DEPTH} deep`);
  }
}

/**
 * How HTML becomes plain text, for email bodies and HTML attachments alike: html-to-text (linear
 * in its input, which its own parser reads once) with no line wrapping, links as their text
 * followed by `[url]` (unless the text is the URL), images and their URLs left out, headings in
 * their own case, scripts, styles and comments dropped, block elements on lines of their own.
 */
const convert = compile({
  wordwrap: false,
  selectors: [
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    { selector: 'img', format: 'skip' },
    ...(['h1', 'h2', 'h3', 'h4', 'h5', 'h6'] as const).map((selector) => ({ selector, options: { uppercase: false } })),
    { selector: 'table', options: { uppercaseHeaderCells: false } },
  ],
});

/**
 * The readable text of an HTML document (see `convert`), non-breaking spaces as spaces. Linear in
 * the input's length, for any shape (unclosed comments, scripts or tags, thousands of attributes).
 * The two limits are applied here, once each: the input is cut to MAX_HTML_INPUT_CHARS (so
 * html-to-text's own cut, and its warning, never happen), and HTML nested deeper than
 * MAX_HTML_DEPTH throws HtmlTooDeepError before it is converted.
 */
export function htmlToPlainText(html: string): string {
  const input = html.length > MAX_HTML_INPUT_CHARS ? html.slice(0, MAX_HTML_INPUT_CHARS) : html;
  if (nestsDeeperThan(input, MAX_HTML_DEPTH)) throw new HtmlTooDeepError();
  return convert(input).replace(/\u00a0/g, ' ');
}

const TOO_DEEP = Symbol('too deep');

/**
 * True when htmlparser2 would hold more than `max` open elements at once. Its own parser does the
 * counting (implied end tags, void elements, raw text of scripts and styles, quoted attributes all
 * as it reads them), stopped as soon as the depth passes `max`: so each element costs at most
 * `max` steps, and the check is linear in the input.
 */
function nestsDeeperThan(html: string, max: number): boolean {
  let depth = 0;
  const parser = new Parser({
    onopentag() {
      depth += 1;
      if (depth > max) throw TOO_DEEP;
    },
    onclosetag() {
      depth -= 1;
    },
  });
  try {
    parser.end(html);
    return false;
  } catch (error) {
    if (error === TOO_DEEP) return true;
    throw error;
  }
}

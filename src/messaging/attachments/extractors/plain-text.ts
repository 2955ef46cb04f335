import { TextDecoder } from 'node:util';
import { decodeXml } from './office-text';

/**
 * Text files: UTF-8 unless a byte-order mark or the MIME type's charset says otherwise; bytes that
 * are not valid in the encoding become U+FFFD rather than failing the file.
 */
export function decodeText(bytes: Buffer, charset?: string | null): string {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return new TextDecoder('utf-8').decode(bytes.subarray(3));
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset || 'utf-8');
  } catch {
    decoder = new TextDecoder('utf-8'); // an unknown charset label: read as UTF-8
  }
  return decoder.decode(bytes);
}

const BLOCK_END = /<\/(p|div|li|tr|h[1-6]|blockquote|pre|section|article|header|footer|table|ul|ol)\s*>|<br\s*\/?>|<hr\s*\/?>/gi;

/** HTML to its readable text: scripts, styles and comments dropped, block ends as line breaks, entities decoded. */
export function htmlToText(html: string): string {
  const text = html
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<(script|style|template|noscript)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<(td|th)\b[^>]*>/gi, '\t')
    .replace(BLOCK_END, '\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&nbsp;/gi, ' ');
  return decodeHtmlEntities(text)
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v\r]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function decodeHtmlEntities(text: string): string {
  return decodeXml(text.replace(/&(nbsp|copy|reg|hellip|mdash|ndash|lsquo|rsquo|ldquo|rdquo|euro);/gi, (_, name: string) => HTML_ENTITIES[name.toLowerCase()]));
}

const HTML_ENTITIES: Record<string, string> = {
  nbsp: ' ',
  copy: '©',
  reg: '®',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  euro: '€',
};

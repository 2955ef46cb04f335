import { TextDecoder } from 'node:util';

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

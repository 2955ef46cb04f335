import { brotliDecompressSync, constants, createInflateRaw, inflateRawSync } from 'node:zlib';
import { isPdfWhiteSpace } from './pdf-syntax';

/**
 * How much each PDF decoding filter makes of its input, computed as PDF.js 5 would decode it
 * (src/core/flate_stream.js, lzw_stream.js, run_length_stream.js, ascii_85_stream.js,
 * ascii_hex_stream.js, predictor_stream.js, brotli_stream.js), but with a limit and without
 * keeping what is not needed: each decoder gives its output's size, and its bytes only when a
 * later filter of the same stream needs them (at most `limit` bytes are ever produced).
 */

/** One 258-byte match per 2 bits is the most any deflate decoder (PDF.js's, lenient as it is) makes of a byte. */
export const MAX_DEFLATE_RATIO = 1032;

/** A stream whose decoded size cannot be bounded here (the file is then refused). */
export class UnverifiableStream extends Error {}

export interface Decoded {
  /** Bytes the filter produced (more than `limit` means: past the limit, stopped). */
  size: number;
  /** The output, when asked for and known; null when only its size is known. */
  bytes: Buffer | null;
}

const EMPTY: Decoded = { size: 0, bytes: Buffer.alloc(0) };

/** Up to this much output, a Flate stream is inflated in one synchronous call; past it, counted as it streams. */
const SYNC_INFLATE_BYTES = 1024 * 1024;

/**
 * FlateDecode. PDF.js checks the 2-byte zlib header (a bad one gives an empty stream), ignores
 * the Adler-32 trailer, and keeps decoding where zlib would stop with an error (a distance too far
 * back, an over-subscribed code): after such an error the rest of the input is counted at the
 * most deflate can make of it. Small streams (most of a normal PDF's) are inflated in one call;
 * a larger one is first counted as it streams, its output dropped chunk by chunk, and inflated
 * again for its bytes only if it fits the limit and they are wanted.
 */
export async function inflatedSize(input: Buffer, limit: number, wantBytes: boolean): Promise<Decoded> {
  if (input.length < 2) return EMPTY;
  const cmf = input[0];
  const flg = input[1];
  if ((cmf & 0x0f) !== 8 || ((cmf << 8) + flg) % 31 !== 0 || flg & 0x20) return EMPTY;
  const raw = input.subarray(2);
  const syncLimit = Math.min(limit + 1, SYNC_INFLATE_BYTES);
  try {
    const out = inflateRawSync(raw, { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: syncLimit });
    return { size: out.length, bytes: out };
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' && syncLimit > limit) return { size: limit + 1, bytes: null };
    // Larger than one call should hold, or zlib stopped at a data error: count it as it streams.
  }
  const { produced, consumed, failed } = await inflateCounting(raw, limit);
  if (failed) return { size: produced + Math.max(0, raw.length - consumed) * MAX_DEFLATE_RATIO, bytes: null };
  if (!wantBytes || produced > limit) return { size: produced, bytes: null };
  // It fits: inflated again, whole, for the caller that needs the bytes (PDF.js will hold as much).
  return { size: produced, bytes: inflateRawSync(raw, { finishFlush: constants.Z_SYNC_FLUSH, maxOutputLength: produced + 1 }) };
}

/** Inflates `raw`, counting the output and dropping it; stops past `limit`, or where zlib fails (and how far it read). */
function inflateCounting(raw: Buffer, limit: number): Promise<{ produced: number; consumed: number; failed: boolean }> {
  return new Promise((resolve) => {
    const inflater = createInflateRaw({ finishFlush: constants.Z_SYNC_FLUSH });
    let produced = 0;
    inflater.on('data', (chunk: Buffer) => {
      produced += chunk.length;
      if (produced > limit) {
        inflater.destroy();
        resolve({ produced, consumed: raw.length, failed: false });
      }
    });
    inflater.on('error', () => resolve({ produced, consumed: inflater.bytesWritten, failed: true }));
    inflater.on('end', () => resolve({ produced, consumed: inflater.bytesWritten, failed: false }));
    inflater.end(raw);
  });
}

/** BrotliDecode (PDF 2.0). PDF.js decodes the whole stream at once; a stream Node cannot decode cannot be bounded. */
export function brotliSize(input: Buffer, limit: number, wantBytes: boolean): Decoded {
  try {
    const out = brotliDecompressSync(input, { maxOutputLength: limit + 1 });
    return { size: out.length, bytes: wantBytes ? out : null };
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') return { size: limit + 1, bytes: null };
    throw new UnverifiableStream(`a BrotliDecode stream that does not decode: ${(error as Error).message}`);
  }
}

/** LZWDecode, as PDF.js's LZWStream decodes it (its lenient handling of bad codes included). */
export function lzwSize(input: Buffer, earlyChange: number, limit: number, wantBytes: boolean): Decoded {
  const values = new Uint8Array(4096);
  const lengths = new Uint16Array(4096);
  const prevCodes = new Uint16Array(4096);
  const sequence = new Uint8Array(4096);
  for (let i = 0; i < 256; i++) {
    values[i] = i;
    lengths[i] = 1;
  }
  let outBytes = wantBytes ? new Uint8Array(Math.min(limit + 1, Math.max(4096, input.length * 4))) : null;
  let size = 0;
  let nextCode = 258;
  let codeLength = 9;
  let prevCode = 0;
  let seqLength = 0;
  let pos = 0;
  let cached = 0;
  let bitsCached = 0;
  const readBits = (n: number): number | null => {
    while (bitsCached < n) {
      if (pos >= input.length) return null;
      cached = ((cached << 8) | input[pos++]) >>> 0;
      bitsCached += 8;
    }
    bitsCached -= n;
    return (cached >>> bitsCached) & ((1 << n) - 1);
  };
  for (;;) {
    const code = readBits(codeLength);
    if (code === null) {
      size += 512; // PDF.js emits a byte per remaining pass of its 512-code block once the input ends
      break;
    }
    const hasPrev = seqLength > 0;
    if (code < 256) {
      sequence[0] = code;
      seqLength = 1;
    } else if (code >= 258) {
      if (code < nextCode) {
        seqLength = lengths[code];
        if (outBytes) for (let j = seqLength - 1, q = code; j >= 0; j--, q = prevCodes[q]) sequence[j] = values[q];
      } else {
        sequence[seqLength++] = sequence[0];
      }
    } else if (code === 256) {
      codeLength = 9;
      nextCode = 258;
      seqLength = 0;
      continue;
    } else {
      break;
    }
    if (hasPrev) {
      prevCodes[nextCode] = prevCode;
      lengths[nextCode] = lengths[prevCode] + 1;
      values[nextCode] = sequence[0];
      nextCode++;
      const n = nextCode + earlyChange;
      codeLength = n & (n - 1) ? codeLength : Math.min(Math.log(n) / 0.6931471805599453 + 1, 12) | 0;
    }
    prevCode = code;
    if (size + seqLength > limit) {
      size += seqLength;
      outBytes = null;
      break;
    }
    if (outBytes) {
      if (size + seqLength > outBytes.length) {
        const grown = new Uint8Array(Math.min(limit + 1, Math.max(outBytes.length * 2, size + seqLength)));
        grown.set(outBytes.subarray(0, size));
        outBytes = grown;
      }
      for (let j = 0; j < seqLength; j++) outBytes[size + j] = sequence[j];
    }
    size += seqLength;
  }
  return { size, bytes: outBytes ? Buffer.from(outBytes.buffer, 0, Math.min(size, outBytes.length)) : null };
}

/** RunLengthDecode, as PDF.js's RunLengthStream decodes it. */
export function runLengthSize(input: Buffer, limit: number, wantBytes: boolean): Decoded {
  let size = 0;
  let pos = 0;
  const chunks: Buffer[] = [];
  while (pos + 2 <= input.length && input[pos] !== 128) {
    const n = input[pos];
    if (n < 128) {
      if (wantBytes) chunks.push(input.subarray(pos + 1, pos + 2 + n));
      size += n + 1;
      pos += 2 + n;
    } else {
      if (wantBytes) chunks.push(Buffer.alloc(257 - n, input[pos + 1]));
      size += 257 - n;
      pos += 2;
    }
    if (size > limit) return { size, bytes: null };
  }
  return { size, bytes: wantBytes ? Buffer.concat(chunks) : null };
}

/** ASCII85Decode, as PDF.js's Ascii85Stream decodes it (at most 4 bytes per input byte: `z`). */
export function ascii85Decode(input: Buffer, limit: number): Decoded {
  const out = Buffer.alloc(Math.min(limit + 1, input.length * 4 + 4));
  let size = 0;
  let pos = 0;
  const group = new Array<number>(5);
  const next = () => (pos < input.length ? input[pos++] : -1);
  for (;;) {
    let c = next();
    while (isPdfWhiteSpace(c)) c = next();
    if (c === -1 || c === 0x7e) break;
    if (size + 4 > out.length) return { size: limit + 1, bytes: null };
    if (c === 0x7a) {
      out.fill(0, size, size + 4);
      size += 4;
      continue;
    }
    group[0] = c;
    let l: number;
    for (l = 1; l < 5; ++l) {
      c = next();
      while (isPdfWhiteSpace(c)) c = next();
      group[l] = c;
      if (c === -1 || c === 0x7e) break;
    }
    const produced = l - 1;
    const last = l < 5;
    for (; l < 5; ++l) group[l] = 0x75;
    let t = 0;
    for (l = 0; l < 5; ++l) t = t * 85 + (group[l] - 33);
    for (l = 3; l >= 0; --l) {
      out[size + l] = t & 0xff;
      t >>= 8;
    }
    size += produced;
    if (last) break;
  }
  return { size, bytes: out.subarray(0, size) };
}

/** ASCIIHexDecode, as PDF.js's AsciiHexStream decodes it. */
export function asciiHexDecode(input: Buffer): Decoded {
  const out = Buffer.alloc((input.length + 1) >> 1);
  let size = 0;
  let first = -1;
  for (const c of input) {
    let digit: number;
    if (c >= 0x30 && c <= 0x39) digit = c & 0x0f;
    else if ((c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)) digit = (c & 0x0f) + 9;
    else if (c === 0x3e) {
      if (first >= 0) out[size++] = first << 4;
      return { size, bytes: out.subarray(0, size) };
    } else continue;
    if (first < 0) first = digit;
    else {
      out[size++] = (first << 4) | digit;
      first = -1;
    }
  }
  return { size, bytes: out.subarray(0, size) };
}

/** A predictor's parameters (DecodeParms), as PDF.js reads them: missing or zero values take their defaults. */
export interface PredictorParams {
  predictor: unknown;
  colors: unknown;
  bitsPerComponent: unknown;
  columns: unknown;
}

/**
 * What PDF.js's PredictorStream allocates for `inputSize` bytes of Flate or LZW output: a PNG
 * predictor turns each row of 1 + rowBytes input bytes into rowBytes; a TIFF one keeps the size
 * but grows its buffer by a row before each read. rowBytes comes from /Columns, which a file can
 * set to anything: a tiny stream with a huge /Columns allocates a huge row. Null when there is no
 * (valid) predictor, and the input passes unchanged.
 */
export function predictedSize(inputSize: number, params: PredictorParams): number | null {
  const predictor = orDefault(params.predictor, 1);
  if (!(predictor > 1)) return null;
  if (predictor !== 2 && (predictor < 10 || predictor > 15)) return null;
  const colors = orDefault(params.colors, 1);
  const bits = orDefault(params.bitsPerComponent, 8);
  const columns = orDefault(params.columns, 1);
  const rowBytes = (columns * colors * bits + 7) >> 3;
  if (rowBytes <= 0) return 0;
  if (predictor === 2) return (Math.ceil(inputSize / rowBytes) + 1) * rowBytes;
  const rows = Math.floor(inputSize / (rowBytes + 1)) + (inputSize % (rowBytes + 1) >= 2 ? 1 : 0);
  return rows * rowBytes;
}

/** JavaScript's `value || fallback`, then as a number (a name or other object is NaN). */
function orDefault(value: unknown, fallback: number): number {
  if (!value) return fallback;
  if (typeof value === 'number') return value;
  if (value === true) return 1;
  return NaN;
}

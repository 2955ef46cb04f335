import { ExtractionLimitError } from './extraction.types';
import { jpegFrame } from './image-pixels';
import { standardDecryptor, StreamDecryptor } from './pdf-encryption';
import {
  ascii85Decode,
  asciiHexDecode,
  brotliSize,
  Decoded,
  inflatedSize,
  lzwSize,
  MAX_DEFLATE_RATIO,
  predictedSize,
  runLengthSize,
  UnverifiableStream,
} from './pdf-filters';
import { isCmd, PdfDict, PdfLexer, PdfName, PdfParser, PdfRef, PdfStreamHead, PdfString, PdfSyntaxUnsupported, PdfValue } from './pdf-syntax';

/**
 * The decompression-bomb guard of PDFs, run before PDF.js sees the file (docs/attachments.md,
 * "PDFs").
 *
 * PDF.js decodes a stream (FlateDecode, LZW, RunLength, ASCII85/Hex, Brotli) into typed arrays,
 * which live outside the JS heap, so a thread's heap limit does not stop a 300 KB PDF whose
 * content stream inflates to 300 MB. This pass finds every stream PDF.js could read (a dictionary
 * followed by `stream` after any `obj` keyword, wherever it is: PDF.js follows the file's own
 * cross-reference offsets, which may point anywhere), and:
 *
 * - decodes, as PDF.js would (decrypting first when the file is encrypted with an empty user
 *   password), every stream that text extraction may read (page contents, forms, fonts, CMaps,
 *   object and cross-reference streams …), adding what they make (every stage of a filter chain,
 *   since PDF.js keeps each stage's buffer), and what the inline images in them make, to one
 *   budget for the file; past it the file is refused;
 * - disables the filters of image streams (`/Subtype /Image`) and of any stream with an image-only
 *   filter (DCT, JPX, JBIG2, CCITT): text extraction never needs their pixels, and a stream labelled
 *   an image but used as page content is then read as its raw bytes, no bigger than the file.
 *   The filter keys are renamed in a copy of the file (same length, so every offset holds).
 *
 * The data of a stream is where PDF.js takes it: from the end of line after `stream`, for /Length
 * bytes if `endstream` follows them, else up to the first `endstream`. A stream whose size cannot
 * be bounded (an indirect /Filter that the file defines twice, a Brotli stream Node cannot decode)
 * refuses the file.
 */
export async function guardPdfStreams(bytes: Buffer, limits: { maxUnzippedBytes: number }): Promise<Buffer> {
  try {
    return await new PdfStreamGuard(bytes, limits.maxUnzippedBytes).run();
  } catch (error) {
    if (error instanceof UnverifiableStream || error instanceof PdfSyntaxUnsupported) {
      throw new ExtractionLimitError(
        'unzipped-size',
        `the PDF has a compressed stream that cannot be checked against the unzipped-size limit (${error.message}); it was not read`,
      );
    }
    throw error;
  }
}

/** Filters whose output only an image needs; PDF.js's own abbreviations included. */
const IMAGE_FILTERS = new Set(['DCTDecode', 'DCT', 'JPXDecode', 'JPX', 'JBIG2Decode', 'CCITTFaxDecode', 'CCF']);
const FILTER_KEYS = ['F', 'Filter'];

type Filter = { name: string; params: PdfValue | undefined };

interface StreamObject extends PdfStreamHead {
  num: number | null;
  gen: number | null;
}

// An `obj` keyword: not preceded by a regular (token) character. Candidates that are not object
// headers (inside a string or a comment, in binary data) parse to nothing or to harmless objects.
const OBJ_KEYWORD = /(?<![!-$&'*.0-;=?-Z\\^-z|~-])obj/g;
const OBJ_NUMBERS = /(\d+)(?:[\0\t\n\f\r ]|%[^\r\n]*[\r\n])+(\d+)(?:[\0\t\n\f\r ]|%[^\r\n]*[\r\n])*$/;
const ENDSTREAM = /end(?:stream|steam[ \t\r\n]|strea[ \t\r\n])/g;
const TRAILER_KEYWORD = /(?<![!-$&'*.0-;=?-Z\\^-z|~-])trailer/g;

class PdfStreamGuard {
  private readonly text: string;
  /** "num gen" → offsets just after each `obj` keyword that defines it. */
  private readonly objects = new Map<string, number[]>();
  /** "num gen" → [decoded object stream, index] for objects inside object streams. */
  private readonly compressed = new Map<string, Array<{ data: Buffer; offset: number }>>();
  private used = 0;
  private copy: Buffer | null = null;
  /** How the file's streams may be encrypted (PDF.js decrypts them before decoding). */
  private decryptors: StreamDecryptor[] = [];

  constructor(
    private readonly bytes: Buffer,
    private readonly budget: number,
  ) {
    this.text = bytes.toString('latin1');
  }

  async run(): Promise<Buffer> {
    const streams = this.findStreams();
    this.decryptors = this.findEncryption(streams);
    // Object streams first: the values other streams' dictionaries refer to may live in them.
    const objectStreams = new Set(streams.filter((s) => nameOf(s.dict.get('Type')) === 'ObjStm'));
    for (const stream of objectStreams) await this.check(stream);
    for (const stream of streams) if (!objectStreams.has(stream)) await this.check(stream);
    return this.copy ?? this.bytes;
  }

  private findStreams(): StreamObject[] {
    const found = new Map<number, StreamObject>();
    for (const match of this.text.matchAll(OBJ_KEYWORD)) {
      const after = match.index + 3;
      const numbers = OBJ_NUMBERS.exec(this.text.slice(Math.max(0, match.index - 256), match.index));
      const num = numbers ? Number(numbers[1]) : null;
      const gen = numbers ? Number(numbers[2]) : null;
      if (num !== null) {
        const key = `${num} ${gen}`;
        const offsets = this.objects.get(key);
        if (offsets) offsets.push(after);
        else this.objects.set(key, [after]);
      }
      const parsed = PdfParser.objectAt(this.bytes, after);
      if (parsed?.stream && !found.has(parsed.stream.dataStart)) found.set(parsed.stream.dataStart, { ...parsed.stream, num, gen });
    }
    return [...found.values()];
  }

  private async check(stream: StreamObject): Promise<void> {
    if (nameOf(stream.dict.get('Subtype')) === 'Image') {
      this.disableFilters(stream.dict);
      return;
    }
    const filters = this.filters(stream.dict);
    if (filters.some((f) => IMAGE_FILTERS.has(f.name))) {
      this.disableFilters(stream.dict);
      return;
    }
    const data = this.bytes.subarray(stream.dataStart, this.dataEnd(stream));
    // In an encrypted file PDF.js decrypts the data first (not every stream: cross-reference
    // streams, and metadata when the file says so, are stored in clear): the larger reading counts.
    const readings = [data];
    if (stream.num !== null && stream.gen !== null) for (const decrypt of this.decryptors) readings.push(decrypt(data, stream.num, stream.gen));
    const left = this.budget - this.used;
    let most = 0;
    let objects: Buffer | null = null;
    for (const reading of readings) {
      const { total, bytes } = await this.measure(filters, reading, left);
      // Content (of a Type3 glyph above all, which PDF.js draws while reading text) may hold inline images.
      const inline = bytes && total <= left ? await this.inlineImagesSize(bytes, left - total) : 0;
      most = Math.max(most, total + inline);
      if (bytes && !objects && this.objectStreamHeader(stream.dict, bytes)) objects = bytes;
    }
    this.charge(most);
    if (objects) this.indexObjectStream(stream.dict, objects);
  }

  /**
   * What decoding `data` through the filter chain makes, every stage added up (stops once past
   * `left`), and the decoded bytes when they are known (not after a predictor).
   */
  private async measure(filters: Filter[], data: Buffer, left: number): Promise<{ total: number; bytes: Buffer | null }> {
    let total = 0;
    let input: Decoded = { size: data.length, bytes: data };
    for (const [index, filter] of filters.entries()) {
      if (index === 0 && data.length === 0) break; // PDF.js: an empty stream
      const output = await this.decode(filter, input, left - total);
      if (output === null) continue; // not a decoding filter: PDF.js passes the bytes on unchanged
      total += output.size;
      input = output;
      const predicted = this.predicted(filter, output.size);
      if (predicted !== null) {
        total += predicted;
        input = { size: predicted, bytes: null };
      }
      if (total > left) return { total, bytes: null };
    }
    return { total, bytes: input.bytes };
  }

  /**
   * The inline images (`BI … ID <data>`) of decoded content, each counted from its data to the end
   * of the content (every filter stops at its own end of data; PDF.js ends the data at an `EI`).
   */
  private async inlineImagesSize(content: Buffer, left: number): Promise<number> {
    let total = 0;
    for (let at = content.indexOf('BI'); at !== -1 && total <= left; at = content.indexOf('BI', at + 2)) {
      const image = PdfParser.inlineImageAt(content, at + 2);
      if (image) total += await this.inlineImageSize(image.dict, content.subarray(image.dataStart), left - total);
    }
    return total;
  }

  /**
   * One inline image: its decoding filters counted like a stream's, then, where an image filter
   * follows (PDF.js decodes it when it draws a Type3 glyph), what that decoder allocates: a JPEG
   * its frame header's pixels (4 bytes each), CCITT fax rows of /Columns bits, at most one row per
   * bit of data.
   */
  private async inlineImageSize(dict: PdfDict, data: Buffer, left: number): Promise<number> {
    const filters = this.filters(dict);
    const cut = filters.findIndex((f) => IMAGE_FILTERS.has(f.name));
    const { total, bytes } = await this.measure(cut === -1 ? filters : filters.slice(0, cut), data, left);
    if (cut === -1 || total > left) return total;
    const image = filters[cut];
    if (!bytes) throw new UnverifiableStream(`an inline image whose ${image.name} data comes out of a predictor`);
    switch (image.name) {
      case 'DCTDecode':
      case 'DCT': {
        const frame = jpegFrame(bytes);
        return total + (frame ? frame.width * frame.height * 4 : 0);
      }
      case 'CCITTFaxDecode':
      case 'CCF': {
        const params = this.resolve(image.params);
        const value = (key: string) => (params instanceof PdfDict ? this.resolve(params.get(key)) : undefined);
        const columns = value('Columns') || 1728;
        const rows = value('Rows') || 0;
        if (typeof columns !== 'number' || typeof rows !== 'number')
          throw new UnverifiableStream('an inline CCITT image whose /Columns or /Rows is not a number');
        return total + Math.min(rows > 0 ? rows : Number.POSITIVE_INFINITY, bytes.length * 8) * Math.ceil(columns / 8);
      }
      default:
        throw new UnverifiableStream(`an inline image with ${image.name}`);
    }
  }

  /** One filter's output; null for a filter that is not a decoder here (unknown names pass data through in PDF.js). */
  private async decode(filter: Filter, input: Decoded, limit: number): Promise<Decoded | null> {
    const ratio = ratioOf(filter.name);
    if (ratio === null) return null;
    if (!input.bytes) return { size: input.size * ratio, bytes: null }; // after a predictor: its bytes are not computed
    switch (filter.name) {
      case 'FlateDecode':
      case 'Fl':
        return inflatedSize(input.bytes, limit, true);
      case 'LZWDecode':
      case 'LZW': {
        const params = this.resolve(filter.params);
        const early = params instanceof PdfDict && params.values.has('EarlyChange') ? this.resolve(params.get('EarlyChange')) : 1;
        if (typeof early !== 'number') throw new UnverifiableStream('an LZWDecode stream with an EarlyChange that is not a number');
        const counted = lzwSize(input.bytes, early, limit, false); // counted first: a bomb is never written out
        return counted.size > limit ? counted : lzwSize(input.bytes, early, limit, true);
      }
      case 'RunLengthDecode':
      case 'RL': {
        const counted = runLengthSize(input.bytes, limit, false);
        return counted.size > limit ? counted : runLengthSize(input.bytes, limit, true);
      }
      case 'ASCII85Decode':
      case 'A85':
        return ascii85Decode(input.bytes, limit);
      case 'ASCIIHexDecode':
      case 'AHx':
        return asciiHexDecode(input.bytes);
      default:
        return brotliSize(input.bytes, limit, true);
    }
  }

  /** PDF.js applies DecodeParms' predictor after FlateDecode and LZWDecode. */
  private predicted(filter: Filter, size: number): number | null {
    if (!['FlateDecode', 'Fl', 'LZWDecode', 'LZW'].includes(filter.name)) return null;
    const params = this.resolve(filter.params);
    if (!(params instanceof PdfDict)) return null;
    const value = (...keys: string[]) => this.resolve(params.get(...keys));
    return predictedSize(size, {
      predictor: value('Predictor'),
      colors: value('Colors'),
      bitsPerComponent: value('BPC', 'BitsPerComponent'),
      columns: value('Columns'),
    });
  }

  private charge(size: number): void {
    this.used += size;
    if (this.used > this.budget) {
      const mb = (this.budget / (1024 * 1024)).toLocaleString('en-US', { maximumFractionDigits: 1 });
      throw new ExtractionLimitError(
        'unzipped-size',
        `the PDF's compressed streams inflate to more than ${mb} MB, the limit; it was not read (a possible decompression bomb)`,
      );
    }
  }

  /** The filter chain as PDF.js's Parser.filter reads it: /F before /Filter, a name or an array of names. */
  private filters(dict: PdfDict): Filter[] {
    const filter = this.resolve(dict.get('F', 'Filter'));
    const params = this.resolve(dict.get('DP', 'DecodeParms'));
    if (filter instanceof PdfName) return [{ name: filter.name, params }];
    if (!Array.isArray(filter)) return [];
    const chain: Filter[] = [];
    for (const [i, item] of filter.entries()) {
      const name = this.resolve(item);
      if (!(name instanceof PdfName)) return []; // PDF.js throws: the stream is never read
      chain.push({ name: name.name, params: Array.isArray(params) ? params[i] : undefined });
    }
    return chain;
  }

  /** Renames every /F and /Filter key of the dictionary (in a copy of the file): PDF.js then reads the raw bytes. */
  private disableFilters(dict: PdfDict): void {
    this.copy ??= Buffer.from(this.bytes);
    for (const key of FILTER_KEYS) for (const at of dict.keyOffsets.get(key) ?? []) this.copy[at + 1] = 0x58; // 'X'
  }

  /**
   * Where PDF.js ends the stream's data: after /Length bytes when `endstream` follows them, else at
   * the first `endstream` (or one of the misspellings PDF.js accepts). When /Length is an indirect
   * object this file does not define exactly once, the end cannot be known: the end of the file
   * (every filter here stops at its own end-of-data, so a longer input only ever counts more).
   */
  private dataEnd(stream: StreamObject): number {
    const length = stream.dict.get('Length');
    const candidates = this.candidates(length);
    if (length instanceof PdfRef && candidates.length !== 1) return this.bytes.length;
    const value = candidates[0];
    if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && this.endstreamAt(stream.dataStart + value)) return stream.dataStart + value;
    ENDSTREAM.lastIndex = stream.dataStart;
    return ENDSTREAM.exec(this.text)?.index ?? this.bytes.length;
  }

  private endstreamAt(offset: number): boolean {
    if (offset > this.bytes.length) return false;
    try {
      return isCmd(new PdfLexer(this.bytes, offset).getObj(), 'endstream');
    } catch {
      return false;
    }
  }

  /** A value with indirect references followed (as PDF.js's Dict.get does); ambiguous ones cannot be checked. */
  private resolve(value: PdfValue | undefined): PdfValue | undefined {
    if (!(value instanceof PdfRef)) return value;
    const values = this.candidates(value);
    const distinct = new Set(values.map(describe));
    if (distinct.size > 1) throw new UnverifiableStream(`object ${value.key} is defined more than once, differently`);
    return values[0] ?? null;
  }

  /** Every definition of a reference in the file (a direct value is its own one candidate). */
  private candidates(value: PdfValue | undefined, depth = 0): PdfValue[] {
    if (!(value instanceof PdfRef)) return value === undefined ? [] : [value];
    if (depth > 8) return [];
    const values: PdfValue[] = [];
    for (const offset of this.objects.get(value.key) ?? []) {
      const parsed = PdfParser.objectAt(this.bytes, offset);
      if (parsed && !parsed.stream) values.push(...this.candidates(parsed.value, depth + 1));
    }
    for (const { data, offset } of this.compressed.get(value.key) ?? []) {
      const parsed = PdfParser.objectAt(data, offset);
      if (parsed) values.push(...this.candidates(parsed.value, depth + 1));
    }
    return values;
  }

  /** The objects an object stream holds (PDF.js: N pairs of object number and offset, objects from /First); null if it is not one. */
  private objectStreamHeader(dict: PdfDict, data: Buffer): Array<{ num: number; offset: number }> | null {
    const count = this.resolve(dict.get('N'));
    const first = this.resolve(dict.get('First'));
    if (nameOf(dict.get('Type')) !== 'ObjStm' || typeof count !== 'number' || typeof first !== 'number') return null;
    const lexer = new PdfLexer(data, 0);
    const entries: Array<{ num: number; offset: number }> = [];
    try {
      for (let i = 0; i < count; i++) {
        const num = lexer.getObj();
        const offset = lexer.getObj();
        if (typeof num !== 'number' || typeof offset !== 'number') return null;
        entries.push({ num, offset: first + offset });
      }
    } catch {
      return null;
    }
    return entries;
  }

  private indexObjectStream(dict: PdfDict, data: Buffer): void {
    for (const { num, offset } of this.objectStreamHeader(dict, data) ?? []) {
      const key = `${num} 0`;
      const entries = this.compressed.get(key);
      if (entries) entries.push({ data, offset });
      else this.compressed.set(key, [{ data, offset }]);
    }
  }

  /**
   * The decryptors of the file: from the /Encrypt entry of every trailer (classic ones, and
   * cross-reference stream dictionaries), since which one PDF.js reads depends on its
   * cross-reference chain. Each is tried, and a stream counts at its largest reading.
   */
  private findEncryption(streams: StreamObject[]): StreamDecryptor[] {
    const trailers = streams.filter((s) => nameOf(s.dict.get('Type')) === 'XRef').map((s) => s.dict);
    for (const match of this.text.matchAll(TRAILER_KEYWORD)) {
      const parsed = PdfParser.objectAt(this.bytes, match.index + 7);
      if (parsed?.value instanceof PdfDict) trailers.push(parsed.value);
    }
    const decryptors = new Map<string, StreamDecryptor>();
    for (const trailer of trailers) {
      const encrypt = this.resolve(trailer.get('Encrypt'));
      if (!(encrypt instanceof PdfDict)) continue;
      const ids = this.resolve(trailer.get('ID'));
      const id = Array.isArray(ids) && ids.length ? this.resolve(ids[0]) : null;
      const fileId = id instanceof PdfString ? id.bytes : '';
      const key = `${describe(encrypt)} ${fileId}`;
      if (decryptors.has(key)) continue;
      const decrypt = standardDecryptor(encrypt, fileId, (value) => this.resolve(value));
      if (decrypt) decryptors.set(key, decrypt);
    }
    return [...decryptors.values()];
  }
}

/** How much one input byte can become at most (used only after a predictor, whose output is not computed); null: not a decoder. */
function ratioOf(name: string): number | null {
  switch (name) {
    case 'FlateDecode':
    case 'Fl':
      return MAX_DEFLATE_RATIO;
    case 'LZWDecode':
    case 'LZW':
      return 8000;
    case 'RunLengthDecode':
    case 'RL':
      return 64;
    case 'ASCII85Decode':
    case 'A85':
      return 4;
    case 'ASCIIHexDecode':
    case 'AHx':
      return 1;
    case 'BrotliDecode':
      return Number.POSITIVE_INFINITY;
    default:
      return null;
  }
}

function nameOf(value: PdfValue | undefined): string | null {
  return value instanceof PdfName ? value.name : null;
}

function describe(value: PdfValue): string {
  if (value instanceof PdfName) return `/${value.name}`;
  if (value instanceof PdfRef) return `${value.key} R`;
  if (value instanceof PdfDict) return `<<${[...value.values].map(([k, v]) => `/${k} ${describe(v)}`).join(' ')}>>`;
  if (Array.isArray(value)) return `[${value.map(describe).join(' ')}]`;
  if (value instanceof PdfString) return `<${Buffer.from(value.bytes, 'latin1').toString('hex')}>`;
  return String(value);
}

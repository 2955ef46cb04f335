import { deflateSync } from 'node:zlib';
import fc from 'fast-check';
import {
  ascii85Encode,
  flateTooFarBack,
  lzwEncode,
  lzwZeros,
  pdfBomb,
  pdfPredictorBomb,
  pdfStream,
  pdfType3InlineImage,
  pdfWithContent,
  runLengthZeros,
  writePdf,
  zlibZeros,
} from '../../../test/fixtures/attachments/make-bombs';
import { makePdf } from '../../../test/fixtures/attachments/make-fixtures';
import { ExtractionError, ExtractionLimitError } from './extraction.types';
import { guardPdfStreams } from './pdf-stream-guard';

/**
 * The PDF decompression-bomb guard on its own (PDF.js reading what it hands on is in
 * extraction-guards.spec.ts): every filter PDF.js decodes is counted against one budget per file,
 * image streams are handed on with their filters disabled, and normal files pass untouched.
 */
jest.setTimeout(30_000);

const LIMITS = { maxUnzippedBytes: 64 * 1024 * 1024 };
const MB = 1024 * 1024;
const REFUSED = "unzipped-size: the PDF's compressed streams inflate to more than 64 MB, the limit; it was not read (a possible decompression bomb)";
const outcome = (bytes: Buffer, limits = LIMITS) =>
  guardPdfStreams(bytes, limits).then(
    (out) => (out === bytes ? 'unchanged' : 'rewritten'),
    (error: Error) => (error instanceof ExtractionLimitError ? `${error.limit}: ${error.message}` : `not a limit: ${error.message}`),
  );
const content = Buffer.from('BT /F1 18 Tf 72 720 Td (Quarterly invoice 4521) Tj ET', 'latin1');

describe('guardPdfStreams', () => {
  it('hands normal PDFs on unchanged: plain, Flate, LZW, hex or base-85 Flate, and predictor content streams', async () => {
    expect(await outcome(makePdf())).toBe('unchanged');
    expect(await outcome(pdfWithContent('/Filter /FlateDecode', deflateSync(content)))).toBe('unchanged');
    expect(await outcome(pdfWithContent('/Filter /LZWDecode', lzwEncode(content)))).toBe('unchanged');
    expect(await outcome(pdfWithContent('/Filter [/ASCIIHexDecode /FlateDecode]', Buffer.from(`${deflateSync(content).toString('hex')}>`)))).toBe('unchanged');
    expect(await outcome(pdfWithContent('/Filter [/ASCII85Decode /FlateDecode]', ascii85Encode(deflateSync(content))))).toBe('unchanged');
    const rows = Buffer.concat(Array.from({ length: 100 }, () => Buffer.from([0, 1, 2, 3, 4, 5])));
    expect(await outcome(pdfWithContent('/Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 5 >>', deflateSync(rows)))).toBe('unchanged');
  });

  it.each([
    ['an honest /Length', { length: 'honest' as const }],
    ['a /Length that lies (100 bytes)', { length: 'lying' as const }],
    ['no /Length', { length: 'missing' as const }],
    ['its zlib data in hex (ASCIIHexDecode, then FlateDecode)', { filters: ['ASCIIHexDecode' as const, 'FlateDecode' as const] }],
    ['a lying /Length and hex data', { length: 'lying' as const, filters: ['ASCIIHexDecode' as const, 'FlateDecode' as const] }],
    ['its zlib data in base 85 (ASCII85Decode, then FlateDecode)', { filters: ['ASCII85Decode' as const, 'FlateDecode' as const] }],
  ])('refuses a 300 KB PDF whose content stream inflates to 300 MB, with %s', async (_, options) => {
    const bomb = await pdfBomb(options);
    expect(bomb.length).toBeLessThan(700 * 1024);
    expect(await outcome(bomb)).toBe(REFUSED);
  });

  it.each(['rc4-128', 'aes-128', 'aes-256'] as const)(
    'decrypts a PDF encrypted with %s (empty user password) as PDF.js would, and refuses the bomb inside',
    async (encryption) => {
      expect(await outcome(await pdfBomb({ encryption }))).toBe(REFUSED);
      expect(await outcome(await pdfBomb({ encryption, inflatedBytes: 40 * MB }))).toBe('unchanged');
    },
  );

  it('refuses LZW and RunLength streams that decode past the limit, counted without decoding them into memory', async () => {
    expect(await outcome(pdfWithContent('/Filter /LZWDecode', lzwZeros(70 * MB)))).toBe(REFUSED);
    expect(await outcome(pdfWithContent('/Filter /RunLengthDecode', runLengthZeros(70 * MB)))).toBe(REFUSED);
    expect(await outcome(pdfWithContent('/Filter /LZWDecode', lzwZeros(40 * MB)))).toBe('unchanged');
  });

  it('counts what PDF.js would decode where zlib gives up (a copy from before the start, which PDF.js fills with zeros)', async () => {
    // 300,000 copies of 258 bytes: 77 MB to PDF.js, an error at the first symbol to zlib.
    expect(await outcome(pdfWithContent('/Filter /FlateDecode', flateTooFarBack(300_000)))).toBe(REFUSED);
  });

  it('refuses a predictor whose /Columns makes one row of 200 MB out of 8 bytes', async () => {
    expect(await outcome(pdfPredictorBomb())).toBe(REFUSED);
  });

  it('adds up every stream of the file against one limit, object streams included', async () => {
    const page = (contents: string) => [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${contents} >>`,
    ];
    const forty = await zlibZeros(40 * MB);
    expect(await outcome(writePdf([...page('4 0 R'), pdfStream(`/Length ${forty.length} /Filter /FlateDecode`, forty)]))).toBe('unchanged');
    const two = writePdf([...page('[4 0 R 5 0 R]'), ...[4, 5].map(() => pdfStream(`/Length ${forty.length} /Filter /FlateDecode`, forty))]);
    expect(await outcome(two)).toBe(REFUSED);
    expect(await outcome(await pdfBomb({ extra: '/Type /ObjStm /N 1 /First 4' }))).toBe(REFUSED);
    expect(await outcome(await pdfBomb({ inflatedBytes: 40 * MB }), { maxUnzippedBytes: 32 * MB })).toBe(REFUSED.replace('64 MB', '32 MB'));
  });

  it('disables the filters of a stream labelled an image, so PDF.js reads its raw bytes even if the page uses it as content', async () => {
    const bomb = await pdfBomb({ extra: '/Subtype /Image /Width 10 /Height 10' });
    const out = await guardPdfStreams(bomb, LIMITS);
    expect(out).not.toBe(bomb);
    expect(out.length).toBe(bomb.length);
    const changed = [...out.keys()].filter((i) => out[i] !== bomb[i]);
    expect(changed.map((i) => bomb.toString('latin1', i - 1, i + 6))).toEqual(['/Filter']);
    expect(out.toString('latin1', changed[0] - 1, changed[0] + 6)).toBe('/Xilter');
    // Image-only filters (DCT, JPX, JBIG2, CCITT) are disabled on any stream: text extraction never needs them.
    const dct = pdfWithContent('/Filter [/FlateDecode /DCTDecode]', await zlibZeros(300 * MB));
    expect(await outcome(dct)).toBe('rewritten');
  });

  it('counts the inline images of content streams, which PDF.js decodes when it draws a Type3 glyph', async () => {
    expect(await outcome(await pdfType3InlineImage('small'))).toBe('unchanged');
    // Unguarded, PDF.js grew by 618 MB reading this one's text (VmHWM).
    expect(await outcome(await pdfType3InlineImage('bomb'))).toBe(REFUSED);
    expect(await outcome(await pdfType3InlineImage('jpeg'))).toBe(REFUSED); // a JPEG frame of 30,000 × 30,000, at 4 bytes a pixel
    // Words that merely look like inline images are not.
    const text = Buffer.from('BT /F1 12 Tf (BIOLOGY ID 12) Tj (BI /F /Fl ID) Tj ET', 'latin1');
    expect(await outcome(pdfWithContent('/Filter /FlateDecode', deflateSync(text)))).toBe('unchanged');
  });

  it('reads names with #xx escapes and indirect filters as PDF.js does', async () => {
    const bomb = await zlibZeros(300 * MB);
    expect(await outcome(pdfWithContent('/Filter /Fl#61teDecode', bomb))).toBe(REFUSED);
    const indirect = (...definitions: string[]) =>
      writePdf([
        '<< /Type /Catalog /Pages 2 0 R >>',
        '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
        '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>',
        pdfStream(`/Length ${bomb.length} /Filter 5 0 R`, bomb),
        ...definitions,
      ]);
    expect(await outcome(indirect('/FlateDecode'))).toBe(REFUSED);
    // Defined twice, differently: which one PDF.js uses depends on its cross-reference table.
    const twice = Buffer.concat([indirect('/FlateDecode'), Buffer.from('5 0 obj\n/Unknown\nendobj\n', 'latin1')]);
    expect(await outcome(twice)).toBe(
      'unzipped-size: the PDF has a compressed stream that cannot be checked against the unzipped-size limit (object 5 0 is defined more than once, differently); it was not read',
    );
  });

  it('answers any damaged PDF with a result or an extraction error, never a crash', async () => {
    const content = Buffer.from('BT /F1 12 Tf (Hello) Tj ET q BI /W 2 /H 2 /F /AHx ID 00ff00ff> EI Q', 'latin1');
    const seeds = [
      makePdf(),
      pdfWithContent('/Filter /FlateDecode', deflateSync(content)),
      pdfWithContent('/Filter /LZWDecode /DecodeParms << /Predictor 12 /Columns 3 >>', lzwEncode(content)),
      await pdfType3InlineImage('small'),
      await pdfBomb({ inflatedBytes: 100_000, encryption: 'aes-128' }),
    ];
    const pieces = [
      'obj',
      'stream',
      'endstream',
      '<<',
      '>>',
      '/Filter',
      '/FlateDecode',
      '/Length 5 0 R',
      'BI',
      'ID',
      '(',
      ')',
      '[',
      '/DP',
      '%',
      ' R ',
      'trailer',
      '/N 99999',
      '/Subtype /Image',
      '#',
      '/Columns -5',
    ];
    const edit = fc.record({ at: fc.nat(), kind: fc.constantFrom('byte', 'insert', 'cut'), value: fc.nat(255), piece: fc.constantFrom(...pieces) });
    await fc.assert(
      fc.asyncProperty(fc.nat(seeds.length - 1), fc.array(edit, { minLength: 1, maxLength: 6 }), async (which, edits) => {
        let bytes = Buffer.from(seeds[which]);
        for (const { at, kind, value, piece } of edits) {
          const i = at % bytes.length;
          if (kind === 'byte') bytes[i] = value;
          else if (kind === 'insert') bytes = Buffer.concat([bytes.subarray(0, i), Buffer.from(piece, 'latin1'), bytes.subarray(i)]);
          else bytes = Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + (value % 20))]);
        }
        const error = await guardPdfStreams(bytes, { maxUnzippedBytes: 8 * MB }).then(
          () => null,
          (e: Error) => e,
        );
        return error === null || error instanceof ExtractionError;
      }),
      { numRuns: 300, seed: 42 },
    );
  });
});

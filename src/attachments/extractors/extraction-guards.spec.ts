import { spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { deflateSync } from 'node:zlib';
import { makeDocx, makePdf, makePng, makeXlsx, PDF_LINES } from '../../../test/fixtures/attachments/make-fixtures';
import {
  ascii85Encode,
  gifFramesBomb,
  hugeIcs,
  jpegBomb,
  lzwEncode,
  manyEntriesZip,
  nestedIcs,
  OFFICE_MIME,
  OfficeKind,
  PDF_BOMB_TEXT,
  pdfBomb,
  pdfPredictorBomb,
  pdfStream,
  pdfType3InlineImage,
  pdfWithContent,
  pngBomb,
  slowPdf,
  slowXlsx,
  writePdf,
  zipBomb,
} from '../../../test/fixtures/attachments/make-bombs';
import { ExtractionPool } from './extraction-pool';
import { DEFAULT_EXTRACTION_LIMITS, ExtractionLimitError } from './extraction.types';
import { OcrEngine } from './ocr-engine';
import { TextExtractor } from './text-extractor';

/**
 * The guards of extraction: zip bombs (declared and lying sizes, entry counts), PDF decompression
 * bombs, image bombs, hostile .ics shapes, the time limit and the per-thread memory limit. Each
 * ends as an ExtractionLimitError naming its limit, and the pool reads the next file as usual.
 */
jest.setTimeout(60_000);

const KINDS: OfficeKind[] = ['docx', 'xlsx', 'pptx'];
const file = (filename: string, mimeType: string, content: Buffer) => ({ filename, mimeType, content });
const limitOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: Error) => (error instanceof ExtractionLimitError ? `${error.limit}: ${error.message}` : `not a limit: ${error.message}`),
  );

describe('extraction guards', () => {
  const ocr = new OcrEngine();
  const pool = new ExtractionPool({ threads: 2, threadMemoryMb: 512, limits: DEFAULT_EXTRACTION_LIMITS });
  const extractor = new TextExtractor(ocr, pool);
  afterAll(() => Promise.all([ocr.onApplicationShutdown(), pool.onApplicationShutdown()]));

  const good = async () => (await extractor.extract(file('memo.docx', OFFICE_MIME.docx, await makeDocx(['still here'])))).text;

  it.each(KINDS)('a %s whose central directory declares 300 MB is refused before anything is inflated', async (kind) => {
    const bomb = await zipBomb(kind);
    expect(bomb.length).toBeLessThan(1024 * 1024);
    expect(await limitOf(extractor.extract(file(`bomb.${kind}`, OFFICE_MIME[kind], bomb)))).toBe(
      `unzipped-size: the .${kind} file declares more than 64 MB unzipped, the limit; it was not read (a possible zip bomb)`,
    );
  });

  it.each(KINDS)('a %s whose headers lie (1 KB declared, 300 MB inside) is stopped while inflating', async (kind) => {
    const bomb = await zipBomb(kind, { headers: 'lying' });
    expect(await limitOf(extractor.extract(file(`bomb.${kind}`, 'application/octet-stream', bomb)))).toMatch(
      new RegExp(`^unzipped-size: the \\.${kind} file's part \\S+ inflates to more than the size its header declares`),
    );
  });

  it('stops at the configured cap: a package just over it is refused, the same content just under it is read', async () => {
    const limits = { maxUnzippedBytes: 2 * 1024 * 1024 };
    const rows = Array.from({ length: 40_000 }, (_, i) => [`row ${i}`, String(i)]);
    const xlsx = await makeXlsx(rows);
    expect(await limitOf(extractor.extract(file('big.xlsx', OFFICE_MIME.xlsx, xlsx), limits))).toMatch(
      /^unzipped-size: the \.xlsx file declares more than 2 MB/,
    );
    const read = await extractor.extract(file('big.xlsx', OFFICE_MIME.xlsx, xlsx), { maxUnzippedBytes: 8 * 1024 * 1024 });
    expect(read.text.split('\n')).toHaveLength(40_000 + 1);
  });

  it.each(KINDS)('a %s listing 20,000 entries is refused from its end-of-central-directory record', async (kind) => {
    expect(await limitOf(extractor.extract(file(`many.${kind}`, OFFICE_MIME[kind], manyEntriesZip(kind))))).toBe(
      `zip-entries: the .${kind} file lists 20002 entries, more than the limit of 10000; it was not opened (a possible zip bomb)`,
    );
  });

  const PDF_REFUSED = "unzipped-size: the PDF's compressed streams inflate to more than 64 MB, the limit; it was not read (a possible decompression bomb)";
  const pdf = (content: Buffer, name = 'bomb.pdf') => file(name, 'application/pdf', content);

  it.each([
    ['an honest /Length', {}],
    ['a /Length that lies', { length: 'lying' as const }],
    ['no /Length', { length: 'missing' as const }],
    ['hex-encoded zlib data', { filters: ['ASCIIHexDecode' as const, 'FlateDecode' as const] }],
  ])('a PDF whose stream inflates to 300 MB (%s) is refused before PDF.js reads it; the next PDF is read', async (_, options) => {
    expect(await limitOf(extractor.extract(pdf(await pdfBomb(options))))).toBe(PDF_REFUSED);
    expect(await limitOf(extractor.extract(pdf(pdfPredictorBomb())))).toBe(PDF_REFUSED);
    expect((await extractor.extract(pdf(makePdf(), 'invoice.pdf'))).text).toBe(PDF_LINES.join('\n'));
  });

  it.each(['rc4-128', 'aes-128', 'aes-256'] as const)(
    'an encrypted PDF (%s, empty user password) is read, and an encrypted bomb refused',
    async (encryption) => {
      // PDF.js opening the small one (with its own decryption) shows the file is encrypted right.
      const small = await extractor.extract(pdf(await pdfBomb({ inflatedBytes: 1024 * 1024, encryption }), 'locked.pdf'));
      expect(small.text.startsWith(PDF_BOMB_TEXT)).toBe(true);
      expect(await limitOf(extractor.extract(pdf(await pdfBomb({ encryption, length: 'lying' }))))).toBe(PDF_REFUSED);
    },
  );

  it('a PDF whose Type3 glyph draws an inline image is read; one whose inline image is a bomb is refused', async () => {
    expect((await extractor.extract(pdf(await pdfType3InlineImage('small'), 'type3.pdf'))).text).toBe('a');
    expect(await limitOf(extractor.extract(pdf(await pdfType3InlineImage('bomb'))))).toBe(PDF_REFUSED);
  });

  it('a PDF bomb labelled an image is handed to PDF.js with its filter disabled: the page keeps its text', async () => {
    const { text } = await extractor.extract(pdf(await pdfBomb({ extra: '/Subtype /Image /Width 10 /Height 10' })));
    expect(text.startsWith(PDF_BOMB_TEXT)).toBe(true);
  });

  it('PDF.js reads what the guard lets through: a page with an image, LZW, base-85 and predictor content streams', async () => {
    const content = Buffer.from('BT /F1 18 Tf 72 720 Td (Hello through every filter) Tj ET', 'latin1');
    // An image drawn before the text: handed on with its filter disabled, the text still comes out.
    const pixels = deflateSync(Buffer.alloc(300));
    const page = Buffer.concat([Buffer.from('q 100 0 0 100 0 0 cm /Im1 Do Q\n', 'latin1'), content]);
    const withImage = writePdf([
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> /Contents 4 0 R >>',
      pdfStream(`/Length ${page.length}`, page),
      '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
      pdfStream(
        `/Length ${pixels.length} /Type /XObject /Subtype /Image /Width 10 /Height 10 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode`,
        pixels,
      ),
    ]);
    for (const built of [
      withImage,
      pdfWithContent('/Filter /LZWDecode', lzwEncode(content)),
      pdfWithContent('/Filter [/ASCII85Decode /FlateDecode]', ascii85Encode(deflateSync(content))),
      pdfWithContent('/Filter /FlateDecode /DecodeParms << /Predictor 2 /Columns 7 >>', deflateSync(tiffPredict(content, 7))),
    ]) {
      expect((await extractor.extract(pdf(built, 'ok.pdf'))).text).toBe('Hello through every filter');
    }
  });

  it.each([
    ['a PNG of 10,000 × 10,000 pixels', 'big.png', 'image/png', () => pngBomb(), '10000 × 10000 pixels'],
    ['a JPEG that declares 30,000 × 30,000', 'big.jpg', 'image/jpeg', async () => jpegBomb(), '30000 × 30000 pixels'],
    [
      'a JPEG whose first frame header is arithmetic-coded, a small baseline one behind it',
      'sly.jpg',
      'image/jpeg',
      async () => jpegBomb({ frame: 0xc9, decoy: true }),
      '30000 × 30000 pixels',
    ],
    ['a GIF of a 10 × 10 screen whose frame declares 10,000 × 10,000', 'frame.gif', 'image/gif', async () => gifFramesBomb(), '10000 × 10000 pixels'],
  ])('%s is refused before OCR; the next image is read', async (_, name, mime, make, declared) => {
    expect(await limitOf(extractor.extract(file(name, mime, await make())))).toBe(
      `image-pixels: the image declares ${declared}, more than the limit of 40,000,000 pixels; it was not read (a possible image bomb)`,
    );
    expect((await extractor.extract(file('scan.png', 'image/png', makePng(['HELLO WORLD'])))).text).toBe('HELLO WORLD');
  });

  it('the pixel limit is configurable', async () => {
    expect(await limitOf(extractor.extract(file('scan.png', 'image/png', makePng(['HELLO WORLD'])), { maxImagePixels: 10_000 }))).toMatch(
      /^image-pixels: the image declares \d+ × \d+ pixels, more than the limit of 10,000 pixels/,
    );
  });

  it('an .ics nested 50,000 deep, or with 100,000 events, is refused before ical.js parses it', async () => {
    expect(await limitOf(extractor.extract(file('deep.ics', 'text/calendar', nestedIcs())))).toBe(
      'calendar-shape: the iCalendar file nests components more than 16 deep; it was not parsed',
    );
    expect(await limitOf(extractor.extract(file('huge.ics', 'text/calendar', hugeIcs())))).toBe(
      'calendar-shape: the iCalendar file has more than 20000 components; it was not parsed',
    );
  });

  it('stops a file at the time limit in its thread, while the main thread keeps turning, and reads the next file', async () => {
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 20);
    try {
      const outcome = await limitOf(extractor.extract(file('slow.pdf', 'application/pdf', slowPdf()), { timeoutMs: 1500 }));
      expect(outcome).toBe('time: pdf extraction took longer than 1500 ms; its thread was stopped');
      // Parsed on the main thread (as before), the interval could not have fired during the parse.
      expect(ticks).toBeGreaterThan(10);
    } finally {
      clearInterval(ticker);
    }
    expect(await good()).toBe('still here');
  });

  it('refuses a sheet whose 60,000 rows never close in one pass, as nested too deep', async () => {
    // Read by regex it took minutes (quadratic); saxes looks prefixes up through every open element,
    // so the nesting is capped and the sheet fails in milliseconds, far inside this limit.
    expect(await limitOf(extractor.extract(file('open-rows.xlsx', OFFICE_MIME.xlsx, slowXlsx()), { timeoutMs: 5000 }))).toBe(
      'not a limit: not a readable .xlsx file: xl/worksheets/sheet1.xml nests elements more than 128 deep',
    );
    expect(await good()).toBe('still here');
  });

  it('reads 2 MB of hostile HTML in one pass: each shape within 10 × the time of a benign 2 MB page (they took minutes)', async () => {
    const size = 2 * 1024 * 1024;
    const fill = (unit: string) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
    const html = (name: string, text: string) => file(name, 'text/html', Buffer.from(text));
    const outcome = (promise: Promise<{ text: string }>) =>
      promise.then(
        ({ text }) => `text: ${text.slice(0, 40)}`,
        (error: ExtractionLimitError) => `${error.limit}: ${error.message}`,
      );
    await extractor.extract(html('warm.html', '<p>a thread started, its code loaded</p>'));
    const started = Date.now();
    const benign = await extractor.extract(html('page.html', fill('<p>Hello <b>world</b>, a <a href="https://example.com/x">link</a>.</p>\n')));
    // Generous for a busy machine, and still far below what a scan per unclosed opener needs (minutes at 2 MB).
    const timeoutMs = Math.max(3000, 10 * (Date.now() - started));
    const refused = 'html-shape: the HTML nests elements more than 256 deep; it was not read';
    const shapes: Array<[string, string, string]> = [
      ['unclosed comments', `<p>Before</p>${fill('<!--')}`, 'text: Before'],
      ['unclosed scripts', `<p>Before</p>${fill('<script>')}`, 'text: Before'],
      ['unclosed styles', `<p>Before</p>${fill('<style>')}`, 'text: Before'],
      ['tags that never end', `<p>Before</p>${fill('<a ')}`, 'text: Before'],
      ['many attributes', `<p>Before</p><p ${fill('a=1 ')}>After</p>`, 'text: Before\n\nAfter'],
      ['nesting 256 deep, 2 MB of it', fill(`${'<b>'.repeat(256)}x${'</b>'.repeat(256)}`), `text: ${'x'.repeat(40)}`],
      ['nested tags', fill('<b>'), refused],
      ['nesting through implied ends', fill('<li><p>'), refused],
      ['end tags inside attribute values', fill('<b x="></b>">'), refused],
    ];
    for (const [name, content, expected] of shapes) {
      expect([name, await outcome(extractor.extract(html(`${name}.html`, content), { timeoutMs }))]).toEqual([name, expected]);
    }
    expect(benign.text.startsWith('Hello world, a link [https://example.com/x].\n\nHello world')).toBe(true);
  });

  it('a file that needs more memory than a thread may use kills that thread, not the process', async () => {
    const small = new ExtractionPool({ threads: 1, threadMemoryMb: 64, limits: DEFAULT_EXTRACTION_LIMITS });
    try {
      const tight = new TextExtractor(ocr, small);
      // mammoth holds a large document's whole tree: about 200 MB of heap for these 50,000 paragraphs.
      const big = await makeDocx(Array.from({ length: 50_000 }, (_, i) => `Paragraph ${i} of a long report, with enough words to weigh something.`));
      expect(await limitOf(tight.extract(file('big.docx', OFFICE_MIME.docx, big)))).toBe(
        'memory: docx extraction needed more than the 64 MB of memory a thread may use; its thread was stopped',
      );
      expect((await tight.extract(file('memo.docx', OFFICE_MIME.docx, await makeDocx(['after the crash'])))).text).toBe('after the crash');
    } finally {
      await small.onApplicationShutdown();
    }
  });

  it('the per-thread limit holds in a process started with a larger heap (--max-old-space-size, which V8 applies to every isolate)', async () => {
    // A child process, as an operator would start the service: the flag cannot be set on this one.
    const script = `
      const { ExtractionPool } = require(${JSON.stringify(require.resolve('./extraction-pool'))});
      const { TextExtractor } = require(${JSON.stringify(require.resolve('./text-extractor'))});
      const { DEFAULT_EXTRACTION_LIMITS } = require(${JSON.stringify(require.resolve('./extraction.types'))});
      const { makeDocx } = require(${JSON.stringify(require.resolve('../../../test/fixtures/attachments/make-fixtures'))});
      (async () => {
        const pool = new ExtractionPool({ threads: 1, threadMemoryMb: 64, limits: DEFAULT_EXTRACTION_LIMITS });
        const big = await makeDocx(Array.from({ length: 50000 }, (_, i) => 'Paragraph ' + i + ' of a long report, with enough words to weigh something.'));
        const outcome = await new TextExtractor({ recognize: async () => '' }, pool)
          .extract({ filename: 'big.docx', mimeType: '${OFFICE_MIME.docx}', content: big })
          .then((r) => 'extracted ' + r.text.length, (e) => e.message);
        await pool.onApplicationShutdown();
        process.stdout.write(JSON.stringify({ outcome, heapMb: Math.round(require('node:v8').getHeapStatistics().heap_size_limit / 1048576) }));
      })();`;
    const child = spawnSync(process.execPath, ['--max-old-space-size=3072', '-r', require.resolve('ts-node/register/transpile-only'), '-e', script], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual({
      outcome: 'docx extraction needed more than the 64 MB of memory a thread may use; its thread was stopped',
      heapMb: expect.any(Number),
    });
    // The process itself keeps the heap it was started with.
    expect(JSON.parse(child.stdout).heapMb).toBeGreaterThan(3000);
  });

  it('a thread failing after its file was settled (out of memory while being stopped at the time limit) does not end the process', async () => {
    const lone = new ExtractionPool({ threads: 1, threadMemoryMb: 64, limits: DEFAULT_EXTRACTION_LIMITS });
    try {
      const extractor1 = new TextExtractor(ocr, lone);
      expect((await extractor1.extract(file('memo.docx', OFFICE_MIME.docx, await makeDocx(['before'])))).text).toBe('before');
      // What piscina does when a thread dies with no task to reject: it emits the error on the pool.
      const piscina = (lone as unknown as { pool: EventEmitter }).pool;
      const late = Object.assign(new Error('Worker terminated due to reaching memory limit: JS heap out of memory'), { code: 'ERR_WORKER_OUT_OF_MEMORY' });
      expect(() => piscina.emit('error', late)).not.toThrow();
      expect(piscina.listenerCount('error')).toBe(1); // one listener, however many files went through
      expect((await extractor1.extract(file('memo.docx', OFFICE_MIME.docx, await makeDocx(['after'])))).text).toBe('after');
    } finally {
      await lone.onApplicationShutdown();
    }
  });
});

/** TIFF predictor 2 for 8-bit, 1-colour rows of `columns` bytes: each byte minus the one before it in its row. */
function tiffPredict(bytes: Buffer, columns: number): Buffer {
  const out = Buffer.alloc(Math.ceil(bytes.length / columns) * columns);
  bytes.copy(out);
  for (let row = out.length - columns; row >= 0; row -= columns) {
    for (let i = columns - 1; i > 0; i--) out[row + i] = (out[row + i] - out[row + i - 1]) & 0xff;
  }
  return out;
}

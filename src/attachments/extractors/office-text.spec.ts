import { OFFICE_MIME } from '../../../test/fixtures/attachments/make-bombs';
import {
  BILLION_LAUGHS,
  DML,
  NAMESPACED_PPTX_TEXT,
  NAMESPACED_XLSX_TEXT,
  namespacedDocx,
  namespacedPptx,
  namespacedXlsx,
  PML,
  SML,
  SML_STRICT,
  XML_DECL,
} from '../../../test/fixtures/attachments/make-namespaced-office';
import { ExtractionPool } from './extraction-pool';
import { DEFAULT_EXTRACTION_LIMITS, ExtractionError, ExtractionLimits } from './extraction.types';
import { OcrEngine } from './ocr-engine';
import { TextExtractor } from './text-extractor';

/**
 * Excel and PowerPoint text is read by namespace, whatever prefixes the file's XML uses: files
 * that bind SpreadsheetML, DrawingML or PresentationML to other prefixes (or to none) read the
 * same. Malformed parts and DTD tricks fail the file like any unreadable one; a large sheet stops
 * at the text cap without reading the rest.
 */
jest.setTimeout(60_000);

describe('Office text, read by namespace', () => {
  const ocr = new OcrEngine();
  const pool = new ExtractionPool({ threads: 1, threadMemoryMb: 512, limits: DEFAULT_EXTRACTION_LIMITS });
  const extractor = new TextExtractor(ocr, pool);
  afterAll(() => Promise.all([ocr.onApplicationShutdown(), pool.onApplicationShutdown()]));

  const read = async (kind: 'docx' | 'xlsx' | 'pptx', content: Buffer, limits: Partial<ExtractionLimits> = {}) =>
    (await extractor.extract({ filename: `file.${kind}`, mimeType: OFFICE_MIME[kind], content }, limits)).text;
  const failure = (kind: 'docx' | 'xlsx' | 'pptx', content: Buffer) =>
    extractor.extract({ filename: `file.${kind}`, mimeType: OFFICE_MIME[kind], content }).then(
      () => 'resolved',
      (error: Error) => `${error instanceof ExtractionError ? 'ExtractionError' : error.name}: ${error.message}`,
    );

  it.each([
    ['the default namespace', { x: '' }],
    ['an x: prefix', { x: 'x' }],
    ['an x: prefix, other prefixes for the relationships', { x: 'x', r: 'rel', pkg: 'pr' }],
    ['a long prefix', { x: 'spreadsheetml' }],
    ['the Strict namespace', { x: 's', ns: SML_STRICT }],
  ])('a workbook under %s reads the same: sheets in order, shared and inline strings, values', async (_, options) => {
    expect(await read('xlsx', await namespacedXlsx(options))).toBe(NAMESPACED_XLSX_TEXT);
  });

  it('an element with the right local name in another namespace is not read as a cell', async () => {
    const sheet =
      `${XML_DECL}<x:worksheet xmlns:x="${SML}" xmlns:o="urn:other"><x:sheetData>` +
      '<x:row r="1"><x:c r="A1"><x:v>7</x:v></x:c><o:c><o:v>not a cell</o:v></o:c></x:row></x:sheetData></x:worksheet>';
    expect(await read('xlsx', await namespacedXlsx({ x: 'x', sheet }))).toBe('## Stock\n7\n\n## Notes\nReorder on Friday');
  });

  it.each([
    ['a:/p:', { a: 'a', p: 'p' }],
    ['dml:/pml:', { a: 'dml', p: 'pml', r: 'rel' }],
    ['default DrawingML, pml:', { a: '', p: 'pml' }],
  ])('a presentation with %s prefixes reads the same, slides in presentation order', async (_, options) => {
    expect(await read('pptx', await namespacedPptx(options))).toBe(NAMESPACED_PPTX_TEXT);
  });

  it.each([
    [
      'a row closed by the wrong tag',
      `<x:worksheet xmlns:x="${SML}"><x:sheetData><x:row><x:c><x:v>1</x:v></x:row></x:sheetData></x:worksheet>`,
      /unexpected close tag/,
    ],
    ['a cut-off part', `<x:worksheet xmlns:x="${SML}"><x:sheetData><x:row><x:c><x:v>1`, /unclosed tag/],
    ['an unbound prefix', `<y:worksheet><y:sheetData/></y:worksheet>`, /unbound namespace prefix/],
  ])('a sheet with %s fails the file as unreadable, and the next file is read', async (_, sheet, detail) => {
    const outcome = await failure('xlsx', await namespacedXlsx({ x: 'x', sheet }));
    expect(outcome).toMatch(/^ExtractionError: not a readable \.xlsx file: xl\/worksheets\/sheet2\.xml is not well-formed XML \(/);
    expect(outcome).toMatch(detail);
    expect(await read('xlsx', await namespacedXlsx({ x: 'x' }))).toBe(NAMESPACED_XLSX_TEXT);
  });

  it('a billion-laughs sheet or slide is refused at its DOCTYPE, quickly, and nothing is expanded', async () => {
    const laughs = BILLION_LAUGHS;
    const started = Date.now();
    const sheet = `${XML_DECL}${laughs}<x:worksheet xmlns:x="${SML}"><x:sheetData><x:row><x:c t="inlineStr"><x:is><x:t>&lol9;</x:t></x:is></x:c></x:row></x:sheetData></x:worksheet>`;
    expect(await failure('xlsx', await namespacedXlsx({ x: 'x', sheet }))).toBe(
      'ExtractionError: not a readable .xlsx file: xl/worksheets/sheet2.xml declares a DOCTYPE, which Office files never do',
    );
    const slide = `${XML_DECL}${laughs}<p:sld xmlns:p="${PML}" xmlns:a="${DML}"><p:cSld><p:spTree><a:p><a:r><a:t>&lol9;</a:t></a:r></a:p></p:spTree></p:cSld></p:sld>`;
    expect(await failure('pptx', await namespacedPptx({ a: 'a', p: 'p', slide2: slide }))).toBe(
      'ExtractionError: not a readable .pptx file: ppt/slides/slide2.xml declares a DOCTYPE, which Office files never do',
    );
    // An entity no DTD declares is not expanded either: the part is malformed.
    const undeclared = `${XML_DECL}<x:worksheet xmlns:x="${SML}"><x:sheetData><x:row><x:c><x:v>&lol9;</x:v></x:c></x:row></x:sheetData></x:worksheet>`;
    expect(await failure('xlsx', await namespacedXlsx({ x: 'x', sheet: undeclared }))).toMatch(/is not well-formed XML \(.*undefined entity/);
    expect(Date.now() - started).toBeLessThan(20_000); // 10^9 "lol"s expanded would not fit in a thread's memory, let alone this
  });

  it('Word files (mammoth) are read by namespace too, and expand no entity', async () => {
    for (const w of ['w', '', 'wml']) expect(await read('docx', await namespacedDocx(w, 'Hello &amp; welcome'))).toBe('Hello & welcome');
    expect(await failure('docx', await namespacedDocx('w', '&lol9;', BILLION_LAUGHS))).toMatch(
      /^ExtractionError: not a readable \.docx file: .*entity not found:&lol9;/,
    );
    const external = '<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/hostname">]>';
    expect(await failure('docx', await namespacedDocx('w', '[&x;]', external))).toMatch(/^ExtractionError: not a readable \.docx file: .*entity not found:&x;/);
  });

  it('a large sheet stops at the text cap: what follows the cap is never parsed', async () => {
    const rows = Array.from(
      { length: 20_000 },
      (_, i) => `<x:row r="${i + 1}"><x:c t="inlineStr"><x:is><x:t>row ${i}</x:t></x:is></x:c><x:c><x:v>${i}</x:v></x:c></x:row>`,
    );
    // Past the rows, the part is broken: a reader that went on to the end would fail the file.
    const sheet = `${XML_DECL}<x:worksheet xmlns:x="${SML}"><x:sheetData>${rows.join('')}<x:row><broken</x:sheetData>`;
    const text = await read('xlsx', await namespacedXlsx({ x: 'x', sheet }), { maxTextChars: 5000 });
    expect(text).toHaveLength(5000);
    expect(text.startsWith('## Stock\nrow 0\t0\nrow 1\t1\n')).toBe(true);
    // Read whole, the same file fails at its broken end.
    expect(await failure('xlsx', await namespacedXlsx({ x: 'x', sheet }))).toMatch(/sheet2\.xml is not well-formed XML/);
  });

  it('a large slide stops at the text cap, and the slide after it is never read', async () => {
    const big = Array.from({ length: 5000 }, (_, i) => `<a:p><a:r><a:t>paragraph ${i}</a:t></a:r></a:p>`).join('');
    const slide2 = `${XML_DECL}<p:sld xmlns:p="${PML}" xmlns:a="${DML}"><p:cSld><p:spTree><p:sp><p:txBody>${big}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`;
    // The second slide in presentation order is broken: a reader that went on to it would fail the file.
    const deck = await namespacedPptx({ a: 'a', p: 'p', slide1: '<p:sld', slide2 });
    const text = await read('pptx', deck, { maxTextChars: 2000 });
    expect(text).toHaveLength(2000);
    expect(text.startsWith('## Slide 1\nparagraph 0\nparagraph 1\n')).toBe(true);
    expect(await failure('pptx', deck)).toMatch(/slide1\.xml is not well-formed XML/);
  });
});

import JSZip from 'jszip';
import { OFFICE_MIME } from '../../../../test/fixtures/attachments/make-bombs';
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

const SML = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const SML_STRICT = 'http://purl.oclc.org/ooxml/spreadsheetml/main';
const WML = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
const DML = 'http://schemas.openxmlformats.org/drawingml/2006/main';
const PML = 'http://schemas.openxmlformats.org/presentationml/2006/main';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const PKG = 'http://schemas.openxmlformats.org/package/2006/relationships';
const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';

/** A qualified name under `prefix` ('' for the default namespace). */
const qn = (prefix: string) => (local: string) => (prefix ? `${prefix}:${local}` : local);
const bind = (prefix: string, uri: string) => (prefix ? ` xmlns:${prefix}="${uri}"` : ` xmlns="${uri}"`);

async function zip(files: Record<string, string>): Promise<Buffer> {
  const archive = new JSZip();
  for (const [name, text] of Object.entries(files)) archive.file(name, text);
  return archive.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

function rels(prefix: string, list: Array<[id: string, type: string, target: string]>): string {
  const q = qn(prefix);
  return (
    `${XML}<${q('Relationships')}${bind(prefix, PKG)}>` +
    list.map(([id, type, target]) => `<${q('Relationship')} Id="${id}" Type="${REL}/${type}" Target="${target}"/>`).join('') +
    `</${q('Relationships')}>`
  );
}

/**
 * A workbook of two sheets (the second first in the package's file names) with shared strings
 * (one of them rich text with a phonetic guide), an inline string, a boolean, a formula and a
 * number. `x` prefixes SpreadsheetML ('' = default namespace), `r` the relationship ids.
 */
function xlsx(options: { x: string; r?: string; pkg?: string; ns?: string; sheet?: string }): Promise<Buffer> {
  const { x, r = 'r', pkg = '', ns = SML } = options;
  const q = qn(x);
  const root = (name: string, extra = '') => `${XML}<${q(name)}${bind(x, ns)}${extra}>`;
  const sheet =
    options.sheet ??
    root('worksheet') +
      `<${q('sheetData')}>` +
      `<${q('row')} r="1"><${q('c')} r="A1" t="s"><${q('v')}>0</${q('v')}></${q('c')}><${q('c')} r="B1" t="s"><${q('v')}>1</${q('v')}></${q('c')}></${q('row')}>` +
      `<${q('row')} r="2"><${q('c')} r="A2" t="inlineStr"><${q('is')}><${q('r')}><${q('t')}>Wid</${q('t')}></${q('r')}><${q('r')}><${q('t')} xml:space="preserve"> &amp; gets</${q('t')}></${q('r')}>` +
      `<${q('rPh')} sb="0" eb="1"><${q('t')}>phonetic</${q('t')}></${q('rPh')}></${q('is')}></${q('c')}>` +
      `<${q('c')} r="B2"><${q('f')}>6*2</${q('f')}><${q('v')}>12</${q('v')}></${q('c')}><${q('c')} r="C2" t="b"><${q('v')}>1</${q('v')}></${q('c')}><${q('c')} r="D2"/></${q('row')}>` +
      `</${q('sheetData')}></${q('worksheet')}>`;
  return zip({
    '_rels/.rels': rels(pkg, [['rId1', 'officeDocument', 'xl/workbook.xml']]),
    'xl/workbook.xml':
      root('workbook', ` xmlns:${r}="${REL}"`) +
      `<${q('sheets')}><${q('sheet')} name="Stock" sheetId="1" ${r}:id="rId2"/><${q('sheet')} name="Notes" sheetId="2" ${r}:id="rId1"/></${q('sheets')}></${q('workbook')}>`,
    'xl/_rels/workbook.xml.rels': rels(pkg, [
      ['rId1', 'worksheet', 'worksheets/sheet1.xml'],
      ['rId2', 'worksheet', 'worksheets/sheet2.xml'],
      ['rId3', 'sharedStrings', 'sharedStrings.xml'],
    ]),
    'xl/worksheets/sheet1.xml':
      root('worksheet') +
      `<${q('sheetData')}><${q('row')} r="1"><${q('c')} r="A1" t="s"><${q('v')}>2</${q('v')}></${q('c')}></${q('row')}></${q('sheetData')}></${q('worksheet')}>`,
    'xl/worksheets/sheet2.xml': sheet,
    'xl/sharedStrings.xml':
      root('sst') +
      `<${q('si')}><${q('t')}>Item</${q('t')}></${q('si')}>` +
      `<${q('si')}><${q('r')}><${q('t')}>Q</${q('t')}></${q('r')}><${q('r')}><${q('t')}>ty</${q('t')}></${q('r')}><${q('rPh')} sb="0" eb="1"><${q('t')}>kyu</${q('t')}></${q('rPh')}></${q('si')}>` +
      `<${q('si')}><${q('t')}>Reorder on Friday</${q('t')}></${q('si')}>` +
      `</${q('sst')}>`,
  });
}

const XLSX_TEXT = '## Stock\nItem\tQty\nWid & gets\t12\tTRUE\n\n## Notes\nReorder on Friday';

/** Two slides (listed in the presentation in the reverse of their file names), `a`/`p` the prefixes of DrawingML and PresentationML. */
function pptx(options: { a: string; p: string; r?: string; slide1?: string; slide2?: string }): Promise<Buffer> {
  const { a, p, r = 'r' } = options;
  const A = qn(a);
  const P = qn(p);
  const slide = (paragraphs: string[][]) =>
    `${XML}<${P('sld')}${bind(p, PML)}${bind(a, DML)}><${P('cSld')}><${P('spTree')}><${P('sp')}><${P('txBody')}><${A('bodyPr')}/>` +
    paragraphs
      .map((runs) => `<${A('p')}>${runs.map((t) => `<${A('r')}><${A('rPr')} lang="en-US"/><${A('t')}>${t}</${A('t')}></${A('r')}>`).join('')}</${A('p')}>`)
      .join('') +
    `<${A('p')}><${A('endParaRPr')}/></${A('p')}></${P('txBody')}></${P('sp')}></${P('spTree')}></${P('cSld')}></${P('sld')}>`;
  return zip({
    '_rels/.rels': rels('', [['rId1', 'officeDocument', 'ppt/presentation.xml']]),
    'ppt/presentation.xml':
      `${XML}<${P('presentation')}${bind(p, PML)} xmlns:${r}="${REL}"><${P('sldIdLst')}>` +
      `<${P('sldId')} id="256" ${r}:id="rId2"/><${P('sldId')} id="257" ${r}:id="rId1"/></${P('sldIdLst')}></${P('presentation')}>`,
    'ppt/_rels/presentation.xml.rels': rels('', [
      ['rId1', 'slide', 'slides/slide1.xml'],
      ['rId2', 'slide', 'slides/slide2.xml'],
    ]),
    'ppt/slides/slide1.xml': options.slide1 ?? slide([['Questions', '?']]),
    'ppt/slides/slide2.xml': options.slide2 ?? slide([['Road', 'map'], ['Ship &amp; tell']]),
  });
}

const PPTX_TEXT = '## Slide 1\nRoadmap\nShip & tell\n\n## Slide 2\nQuestions?';

/** A Word document of one paragraph, WordprocessingML under `w` ('' = default namespace), after `prolog`. */
function docx(w: string, text: string, prolog = ''): Promise<Buffer> {
  const W = qn(w);
  return zip({
    '_rels/.rels': rels('', [['rId1', 'officeDocument', 'word/document.xml']]),
    'word/document.xml':
      `${XML}${prolog}<${W('document')}${bind(w, WML)}><${W('body')}><${W('p')}><${W('r')}><${W('t')}>${text}</${W('t')}></${W('r')}></${W('p')}>` +
      `</${W('body')}></${W('document')}>`,
  });
}

const BILLION_LAUGHS =
  '<!DOCTYPE lolz [<!ENTITY lol "lol">' +
  Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`).join('') +
  ']>';

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
    expect(await read('xlsx', await xlsx(options))).toBe(XLSX_TEXT);
  });

  it('an element with the right local name in another namespace is not read as a cell', async () => {
    const sheet =
      `${XML}<x:worksheet xmlns:x="${SML}" xmlns:o="urn:other"><x:sheetData>` +
      '<x:row r="1"><x:c r="A1"><x:v>7</x:v></x:c><o:c><o:v>not a cell</o:v></o:c></x:row></x:sheetData></x:worksheet>';
    expect(await read('xlsx', await xlsx({ x: 'x', sheet }))).toBe('## Stock\n7\n\n## Notes\nReorder on Friday');
  });

  it.each([
    ['a:/p:', { a: 'a', p: 'p' }],
    ['dml:/pml:', { a: 'dml', p: 'pml', r: 'rel' }],
    ['default DrawingML, pml:', { a: '', p: 'pml' }],
  ])('a presentation with %s prefixes reads the same, slides in presentation order', async (_, options) => {
    expect(await read('pptx', await pptx(options))).toBe(PPTX_TEXT);
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
    const outcome = await failure('xlsx', await xlsx({ x: 'x', sheet }));
    expect(outcome).toMatch(/^ExtractionError: not a readable \.xlsx file: xl\/worksheets\/sheet2\.xml is not well-formed XML \(/);
    expect(outcome).toMatch(detail);
    expect(await read('xlsx', await xlsx({ x: 'x' }))).toBe(XLSX_TEXT);
  });

  it('a billion-laughs sheet or slide is refused at its DOCTYPE, quickly, and nothing is expanded', async () => {
    const laughs = BILLION_LAUGHS;
    const started = Date.now();
    const sheet = `${XML}${laughs}<x:worksheet xmlns:x="${SML}"><x:sheetData><x:row><x:c t="inlineStr"><x:is><x:t>&lol9;</x:t></x:is></x:c></x:row></x:sheetData></x:worksheet>`;
    expect(await failure('xlsx', await xlsx({ x: 'x', sheet }))).toBe(
      'ExtractionError: not a readable .xlsx file: xl/worksheets/sheet2.xml declares a DOCTYPE, which Office files never do',
    );
    const slide = `${XML}${laughs}<p:sld xmlns:p="${PML}" xmlns:a="${DML}"><p:cSld><p:spTree><a:p><a:r><a:t>&lol9;</a:t></a:r></a:p></p:spTree></p:cSld></p:sld>`;
    expect(await failure('pptx', await pptx({ a: 'a', p: 'p', slide2: slide }))).toBe(
      'ExtractionError: not a readable .pptx file: ppt/slides/slide2.xml declares a DOCTYPE, which Office files never do',
    );
    // An entity no DTD declares is not expanded either: the part is malformed.
    const undeclared = `${XML}<x:worksheet xmlns:x="${SML}"><x:sheetData><x:row><x:c><x:v>&lol9;</x:v></x:c></x:row></x:sheetData></x:worksheet>`;
    expect(await failure('xlsx', await xlsx({ x: 'x', sheet: undeclared }))).toMatch(/is not well-formed XML \(.*undefined entity/);
    expect(Date.now() - started).toBeLessThan(20_000); // 10^9 "lol"s expanded would not fit in a thread's memory, let alone this
  });

  it('Word files (mammoth) are read by namespace too, and expand no entity', async () => {
    for (const w of ['w', '', 'wml']) expect(await read('docx', await docx(w, 'Hello &amp; welcome'))).toBe('Hello & welcome');
    expect(await failure('docx', await docx('w', '&lol9;', BILLION_LAUGHS))).toMatch(/^ExtractionError: not a readable \.docx file: .*entity not found:&lol9;/);
    const external = '<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/hostname">]>';
    expect(await failure('docx', await docx('w', '[&x;]', external))).toMatch(/^ExtractionError: not a readable \.docx file: .*entity not found:&x;/);
  });

  it('a large sheet stops at the text cap: what follows the cap is never parsed', async () => {
    const rows = Array.from(
      { length: 20_000 },
      (_, i) => `<x:row r="${i + 1}"><x:c t="inlineStr"><x:is><x:t>row ${i}</x:t></x:is></x:c><x:c><x:v>${i}</x:v></x:c></x:row>`,
    );
    // Past the rows, the part is broken: a reader that went on to the end would fail the file.
    const sheet = `${XML}<x:worksheet xmlns:x="${SML}"><x:sheetData>${rows.join('')}<x:row><broken</x:sheetData>`;
    const text = await read('xlsx', await xlsx({ x: 'x', sheet }), { maxTextChars: 5000 });
    expect(text).toHaveLength(5000);
    expect(text.startsWith('## Stock\nrow 0\t0\nrow 1\t1\n')).toBe(true);
    // Read whole, the same file fails at its broken end.
    expect(await failure('xlsx', await xlsx({ x: 'x', sheet }))).toMatch(/sheet2\.xml is not well-formed XML/);
  });

  it('a large slide stops at the text cap, and the slide after it is never read', async () => {
    const big = Array.from({ length: 5000 }, (_, i) => `<a:p><a:r><a:t>paragraph ${i}</a:t></a:r></a:p>`).join('');
    const slide2 = `${XML}<p:sld xmlns:p="${PML}" xmlns:a="${DML}"><p:cSld><p:spTree><p:sp><p:txBody>${big}</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`;
    // The second slide in presentation order is broken: a reader that went on to it would fail the file.
    const deck = await pptx({ a: 'a', p: 'p', slide1: '<p:sld', slide2 });
    const text = await read('pptx', deck, { maxTextChars: 2000 });
    expect(text).toHaveLength(2000);
    expect(text.startsWith('## Slide 1\nparagraph 0\nparagraph 1\n')).toBe(true);
    expect(await failure('pptx', deck)).toMatch(/slide1\.xml is not well-formed XML/);
  });
});

import { posix } from 'node:path';
import mammoth from 'mammoth';
import { ExtractionError } from './extraction.types';
import { attribute, CappedLines, is, NS, readXmlPart, XmlElement } from './office-xml';
import { characterCount, clip } from './text-output';
import { ZipArchive, ZipLimits } from './zip-archive';

/**
 * Word: the document's paragraphs as plain text, by mammoth. mammoth reads the package through the
 * `file` input (its own seam for an opened package: `exists` and `read`), so every part it reads
 * is inflated by ZipArchive, under the unzipped-size cap.
 */
export async function extractDocxText(bytes: Buffer, limits: ZipLimits): Promise<string> {
  const zip = await ZipArchive.open(bytes, 'docx', limits);
  const file = {
    exists: (name: string) => zip.has(name),
    read: async (name: string, encoding?: string) => {
      const data = await zip.read(name);
      if (!data) throw new ExtractionError(`not a readable .docx file: ${name} is missing`);
      if (encoding === 'base64') return data.toString('base64');
      return encoding ? new TextDecoder(encoding).decode(data) : new Uint8Array(data);
    },
  };
  try {
    // `file` is missing from mammoth's type declarations, not from mammoth (lib/unzip.js).
    const { value } = await mammoth.extractRawText({ file } as unknown as { buffer: Buffer });
    return value;
  } catch (error) {
    if (error instanceof ExtractionError) throw error;
    throw new ExtractionError(`not a readable .docx file: ${(error as Error).message}`);
  }
}

/** The caps an Office file is read under: the zip guard's, and the text cap (reading stops once it is reached). */
export type OfficeLimits = ZipLimits & { maxTextChars: number };

/**
 * Excel: every sheet in workbook order, a `## <sheet name>` line, then one line per row with the
 * cells' values separated by tabs (shared strings resolved; numbers as stored; formulas as their
 * cached value). A .xlsx is a zip of XML parts: ZipArchive inflates them and saxes reads them as
 * they inflate, by namespace, whatever prefixes the file uses (office-xml.ts).
 */
export async function extractXlsxText(bytes: Buffer, limits: OfficeLimits): Promise<string> {
  const zip = await ZipArchive.open(bytes, 'xlsx', limits);
  requirePart(zip, 'xl/workbook.xml', 'xlsx');
  const rels = await relationships(zip, 'xl/_rels/workbook.xml.rels', 'xl', 'xlsx');
  const sheets: Array<{ name: string; target: string | undefined }> = [];
  await readXmlPart(zip, 'xl/workbook.xml', 'xlsx', {
    open: (el) => {
      if (is(el, NS.spreadsheet, 'sheet')) {
        sheets.push({ name: attribute(el, null, 'name') ?? 'Sheet', target: rels.get(attribute(el, NS.officeRelationships, 'id') ?? '')?.target });
      }
    },
  });
  const sharedPath = [...rels.values()].find((r) => r.type.endsWith('/sharedStrings'))?.target ?? 'xl/sharedStrings.xml';
  const shared = await sharedStrings(zip, sharedPath, limits.maxTextChars);
  const out = new CappedLines(limits.maxTextChars);
  for (const sheet of sheets) {
    if (out.full) break;
    out.add(`## ${sheet.name}`);
    if (sheet.target) await readSheet(zip, sheet.target, shared, out);
    out.add('');
  }
  return out.toString();
}

/** The shared-strings table: each `<si>`'s text (none longer than the text cap). */
async function sharedStrings(zip: ZipArchive, path: string, maxChars: number): Promise<string[]> {
  const strings: string[] = [];
  const runs = new RichText(maxChars);
  await readXmlPart(zip, path, 'xlsx', {
    open: (el) => (is(el, NS.spreadsheet, 'si') ? runs.start() : runs.open(el)),
    close: (el) => (is(el, NS.spreadsheet, 'si') ? strings.push(runs.end()) : runs.close(el)),
    text: (text) => runs.text(text),
  });
  return strings;
}

/** One worksheet's rows, each as one line of tab-separated values, added to `out` until it is full. */
async function readSheet(zip: ZipArchive, path: string, shared: string[], out: CappedLines): Promise<void> {
  let cells: string[] = [];
  let rowChars = 0;
  let cell: { type: string | undefined; value: string | null } | null = null;
  let inValue = false;
  const inline = new RichText(out.room);
  const endRow = () => {
    while (cells.length && cells[cells.length - 1] === '') cells.pop();
    if (cells.length) out.add(cells.join('\t'));
    cells = [];
    rowChars = 0;
  };
  await readXmlPart(
    zip,
    path,
    'xlsx',
    {
      open: (el) => {
        if (!NS.spreadsheet.has(el.uri)) return;
        if (el.local === 'row') cells = [];
        else if (el.local === 'c') cell = { type: attribute(el, null, 't'), value: null };
        else if (cell && el.local === 'v') inValue = true;
        else if (cell && el.local === 'is') inline.start();
        else if (cell) inline.open(el);
      },
      close: (el) => {
        if (!NS.spreadsheet.has(el.uri) || out.full) return;
        if (el.local === 'row') endRow();
        else if (el.local === 'c' && cell) {
          const value = cellValue(cell.type, cell.value, shared);
          cells.push(value);
          cell = null;
          // A row longer than the text still wanted goes out now, cut, and reading stops.
          rowChars += characterCount(value) + 1;
          if (rowChars > out.room) endRow();
        } else if (el.local === 'v') inValue = false;
        else if (cell && el.local === 'is') cell.value = inline.end();
        else if (cell) inline.close(el);
      },
      text: (text) => {
        if (!cell) return;
        if (inValue) cell.value = (cell.value ?? '') + text;
        else inline.text(text);
      },
    },
    () => out.full,
  );
}

function cellValue(type: string | undefined, raw: string | null, shared: string[]): string {
  if (type === 'inlineStr') return raw ?? '';
  if (raw === null) return '';
  if (type === 's') return shared[Number(raw)] ?? '';
  if (type === 'b') return raw === '1' ? 'TRUE' : 'FALSE';
  return raw;
}

/**
 * The text of a SpreadsheetML rich-text run list (`<si>`, `<is>`): its `<t>` nodes, without
 * phonetic guides (`<rPh>`, whose own `<t>` are skipped with it), kept to at most `maxChars`.
 */
class RichText {
  private value = '';
  private inText = false;
  private phonetic = 0;

  constructor(private readonly maxChars: number) {}

  start(): void {
    this.value = '';
    this.inText = false;
    this.phonetic = 0;
  }

  open(el: XmlElement): void {
    if (!NS.spreadsheet.has(el.uri)) return;
    if (el.local === 'rPh') this.phonetic += 1;
    else if (el.local === 't') this.inText = true;
  }

  close(el: XmlElement): void {
    if (!NS.spreadsheet.has(el.uri)) return;
    if (el.local === 'rPh') this.phonetic -= 1;
    else if (el.local === 't') this.inText = false;
  }

  text(text: string): void {
    if (this.inText && this.phonetic === 0 && this.value.length < this.maxChars * 2) this.value += text;
  }

  end(): string {
    const value = clip(this.value, this.maxChars);
    this.start();
    return value;
  }
}

/**
 * PowerPoint: every slide in presentation order, a `## Slide <n>` line, then its paragraphs
 * (the text runs of each DrawingML paragraph, `<a:p>`), one per line.
 */
export async function extractPptxText(bytes: Buffer, limits: OfficeLimits): Promise<string> {
  const zip = await ZipArchive.open(bytes, 'pptx', limits);
  requirePart(zip, 'ppt/presentation.xml', 'pptx');
  const rels = await relationships(zip, 'ppt/_rels/presentation.xml.rels', 'ppt', 'pptx');
  let slides: string[] = [];
  await readXmlPart(zip, 'ppt/presentation.xml', 'pptx', {
    open: (el) => {
      if (!is(el, NS.presentation, 'sldId')) return;
      const target = rels.get(attribute(el, NS.officeRelationships, 'id') ?? '')?.target;
      if (target) slides.push(target);
    },
  });
  if (slides.length === 0) {
    slides = zip
      .names()
      .filter((name) => /^ppt\/slides\/slide\d+\.xml$/.test(name))
      .sort((a, b) => Number(/\d+/.exec(posix.basename(a))![0]) - Number(/\d+/.exec(posix.basename(b))![0]));
  }
  const out = new CappedLines(limits.maxTextChars);
  for (const [index, path] of slides.entries()) {
    if (out.full) break;
    out.add(`## Slide ${index + 1}`);
    await readSlide(zip, path, out);
    out.add('');
  }
  return out.toString();
}

/** One slide's paragraphs: the text of the `<a:t>` runs in each outermost `<a:p>`. */
async function readSlide(zip: ZipArchive, path: string, out: CappedLines): Promise<void> {
  let depth = 0; // of DrawingML paragraphs
  let inText = false;
  let paragraph = '';
  await readXmlPart(
    zip,
    path,
    'pptx',
    {
      open: (el) => {
        if (is(el, NS.drawing, 'p') && depth++ === 0) paragraph = '';
        else if (depth > 0 && is(el, NS.drawing, 't')) inText = true;
      },
      close: (el) => {
        if (is(el, NS.drawing, 't')) inText = false;
        else if (is(el, NS.drawing, 'p') && --depth === 0 && paragraph.trim()) out.add(paragraph);
      },
      text: (text) => {
        if (inText && paragraph.length <= out.room) paragraph += text;
      },
    },
    () => out.full,
  );
}

function requirePart(zip: ZipArchive, path: string, kind: string): void {
  if (!zip.has(path)) throw new ExtractionError(`not a readable .${kind} file: ${path} is missing`);
}

/** A `.rels` part: relationship id → its type and the part path inside the package (targets are relative to `base`). */
async function relationships(zip: ZipArchive, path: string, base: string, kind: string): Promise<Map<string, { type: string; target: string }>> {
  const map = new Map<string, { type: string; target: string }>();
  await readXmlPart(zip, path, kind, {
    open: (el) => {
      if (!is(el, NS.packageRelationships, 'Relationship')) return;
      const id = attribute(el, null, 'Id');
      const target = attribute(el, null, 'Target');
      if (!id || !target) return;
      map.set(id, { type: attribute(el, null, 'Type') ?? '', target: target.startsWith('/') ? target.slice(1) : posix.normalize(posix.join(base, target)) });
    },
  });
  return map;
}

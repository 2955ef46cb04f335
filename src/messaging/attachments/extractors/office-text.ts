import { posix } from 'node:path';
import mammoth from 'mammoth';
import { ExtractionError } from './extraction.types';
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

/**
 * Excel: every sheet in workbook order, a `## <sheet name>` line, then one line per row with the
 * cells' values separated by tabs (shared strings resolved; numbers as stored; formulas as their
 * cached value). A .xlsx is a zip of XML parts: ZipArchive opens it, and the parts' text nodes are
 * read directly (the cells' XML is regular and machine-written).
 */
export async function extractXlsxText(bytes: Buffer, limits: ZipLimits): Promise<string> {
  const zip = await ZipArchive.open(bytes, 'xlsx', limits);
  const workbook = await required(zip, 'xl/workbook.xml', 'xlsx');
  const rels = relationshipTargets(await zip.text('xl/_rels/workbook.xml.rels'), 'xl');
  const shared = elements(await zip.text('xl/sharedStrings.xml'), 'si').map((si) => runText(si.body));
  const out: string[] = [];
  for (const sheet of elements(workbook, 'sheet')) {
    const name = attribute(sheet.attrs, 'name') ?? 'Sheet';
    const target = rels.get(attribute(sheet.attrs, 'r:id') ?? '');
    const xml = target ? await zip.text(target) : '';
    out.push(`## ${name}`);
    for (const row of elements(xml, 'row')) {
      const cells = elements(row.body, 'c').map((c) => cellValue(c, shared));
      while (cells.length && cells[cells.length - 1] === '') cells.pop();
      if (cells.length) out.push(cells.join('\t'));
    }
    out.push('');
  }
  return out.join('\n');
}

/**
 * PowerPoint: every slide in presentation order, a `## Slide <n>` line, then its paragraphs
 * (the text runs of each `<a:p>`), one per line.
 */
export async function extractPptxText(bytes: Buffer, limits: ZipLimits): Promise<string> {
  const zip = await ZipArchive.open(bytes, 'pptx', limits);
  const presentation = await required(zip, 'ppt/presentation.xml', 'pptx');
  const rels = relationshipTargets(await zip.text('ppt/_rels/presentation.xml.rels'), 'ppt');
  let slides = elements(presentation, 'p:sldId')
    .map((s) => rels.get(attribute(s.attrs, 'r:id') ?? ''))
    .filter((t): t is string => !!t);
  if (slides.length === 0) {
    slides = zip
      .names()
      .filter((name) => /^ppt\/slides\/slide\d+\.xml$/.test(name))
      .sort((a, b) => Number(/\d+/.exec(posix.basename(a))![0]) - Number(/\d+/.exec(posix.basename(b))![0]));
  }
  const out: string[] = [];
  for (const [index, path] of slides.entries()) {
    const xml = await zip.text(path);
    out.push(`## Slide ${index + 1}`);
    for (const paragraph of elements(xml, 'a:p')) {
      const text = elements(paragraph.body, 'a:t')
        .map((t) => decodeXml(t.body))
        .join('');
      if (text.trim()) out.push(text);
    }
    out.push('');
  }
  return out.join('\n');
}

async function required(zip: ZipArchive, path: string, kind: string): Promise<string> {
  if (!zip.has(path)) throw new ExtractionError(`not a readable .${kind} file: ${path} is missing`);
  return zip.text(path);
}

/** Relationship id → part path inside the package (targets are relative to `base`). */
function relationshipTargets(xml: string, base: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const rel of elements(xml, 'Relationship')) {
    const id = attribute(rel.attrs, 'Id');
    const target = attribute(rel.attrs, 'Target');
    if (!id || !target) continue;
    map.set(id, target.startsWith('/') ? target.slice(1) : posix.normalize(posix.join(base, target)));
  }
  return map;
}

function cellValue(cell: { attrs: string; body: string }, shared: string[]): string {
  const type = attribute(cell.attrs, 't');
  if (type === 'inlineStr') return runText(/<is\b[^>]*>([\s\S]*?)<\/is>/.exec(cell.body)?.[1] ?? '');
  const raw = /<v\b[^>]*>([\s\S]*?)<\/v>/.exec(cell.body)?.[1];
  if (raw === undefined) return '';
  const value = decodeXml(raw);
  if (type === 's') return shared[Number(value)] ?? '';
  if (type === 'b') return value === '1' ? 'TRUE' : 'FALSE';
  return value;
}

/** The text of a rich-text run list (`<t>` nodes), without phonetic guides (`<rPh>`, whose own `<t>` are skipped with it). */
function runText(xml: string): string {
  return elements(withoutElements(xml, 'rPh'), 't')
    .map((t) => decodeXml(t.body))
    .join('');
}

/**
 * Elements named `name` (not nested in one another), with their attribute text and body: each
 * opening tag to the first closing tag after it. One pass over the text, whatever its shape: an
 * opening tag that is never closed is skipped without scanning the rest of the text again for
 * each one (which made a sheet whose rows never close quadratic).
 */
function elements(xml: string, name: string): Array<{ attrs: string; body: string; start: number; end: number }> {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const opening = new RegExp(`<${escaped}(?=[\\s/>])([^<>]*?)(/?)>`, 'g'); // no `<` inside a tag: a tag never closed stops at the next one
  const closing = `</${name}>`;
  const found: Array<{ attrs: string; body: string; start: number; end: number }> = [];
  let close = -2; // the first closing tag at or after the last place looked from (-1: there is none; -2: not looked yet)
  let match: RegExpExecArray | null;
  while ((match = opening.exec(xml))) {
    if (match[2] === '/') {
      found.push({ attrs: match[1], body: '', start: match.index, end: opening.lastIndex });
      continue;
    }
    const bodyStart = opening.lastIndex;
    if (close !== -1 && close < bodyStart) close = xml.indexOf(closing, bodyStart);
    if (close === -1) continue; // never closed: only self-closing ones can follow
    found.push({ attrs: match[1], body: xml.slice(bodyStart, close), start: match.index, end: close + closing.length });
    opening.lastIndex = close + closing.length;
  }
  return found;
}

/** The text without the elements named `name`. */
function withoutElements(xml: string, name: string): string {
  let out = '';
  let at = 0;
  for (const element of elements(xml, name)) {
    out += xml.slice(at, element.start);
    at = element.end;
  }
  return out + xml.slice(at);
}

function attribute(attrs: string, name: string): string | undefined {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`(?:^|\\s)${escaped}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`).exec(attrs);
  return m ? decodeXml(m[1] ?? m[2]) : undefined;
}

const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function decodeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|[a-zA-Z]+);/g, (whole, entity: string) => {
    if (entity[0] === '#') {
      const code = entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[entity] ?? whole;
  });
}

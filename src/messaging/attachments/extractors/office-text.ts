import { posix } from 'node:path';
import JSZip from 'jszip';
import mammoth from 'mammoth';
import { ExtractionError } from './extraction.types';

/** Word: the document's paragraphs as plain text, by mammoth. */
export async function extractDocxText(bytes: Buffer): Promise<string> {
  try {
    const { value } = await mammoth.extractRawText({ buffer: bytes });
    return value;
  } catch (error) {
    throw new ExtractionError(`not a readable .docx file: ${(error as Error).message}`);
  }
}

/**
 * Excel: every sheet in workbook order, a `## <sheet name>` line, then one line per row with the
 * cells' values separated by tabs (shared strings resolved; numbers as stored; formulas as their
 * cached value). A .xlsx is a zip of XML parts: jszip opens it, and the parts' text nodes are read
 * directly (the cells' XML is regular and machine-written).
 */
export async function extractXlsxText(bytes: Buffer): Promise<string> {
  const zip = await openZip(bytes, 'xlsx');
  const workbook = await required(zip, 'xl/workbook.xml', 'xlsx');
  const rels = relationshipTargets(await optional(zip, 'xl/_rels/workbook.xml.rels'), 'xl');
  const shared = [...(await optional(zip, 'xl/sharedStrings.xml')).matchAll(/<si\b[^>]*>([\s\S]*?)<\/si>/g)].map((m) => runText(m[1]));
  const out: string[] = [];
  for (const sheet of elements(workbook, 'sheet')) {
    const name = attribute(sheet.attrs, 'name') ?? 'Sheet';
    const target = rels.get(attribute(sheet.attrs, 'r:id') ?? '');
    const xml = target ? await optional(zip, target) : '';
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
export async function extractPptxText(bytes: Buffer): Promise<string> {
  const zip = await openZip(bytes, 'pptx');
  const presentation = await required(zip, 'ppt/presentation.xml', 'pptx');
  const rels = relationshipTargets(await optional(zip, 'ppt/_rels/presentation.xml.rels'), 'ppt');
  let slides = elements(presentation, 'p:sldId').map((s) => rels.get(attribute(s.attrs, 'r:id') ?? '')).filter((t): t is string => !!t);
  if (slides.length === 0) {
    slides = Object.keys(zip.files)
      .filter((name) => /^ppt\/slides\/slide\d+\.xml$/.test(name))
      .sort((a, b) => Number(/\d+/.exec(posix.basename(a))![0]) - Number(/\d+/.exec(posix.basename(b))![0]));
  }
  const out: string[] = [];
  for (const [index, path] of slides.entries()) {
    const xml = await optional(zip, path);
    out.push(`## Slide ${index + 1}`);
    for (const paragraph of elements(xml, 'a:p')) {
      const text = [...paragraph.body.matchAll(/<a:t(?:\s[^>]*)?>([\s\S]*?)<\/a:t>/g)].map((m) => decodeXml(m[1])).join('');
      if (text.trim()) out.push(text);
    }
    out.push('');
  }
  return out.join('\n');
}

async function openZip(bytes: Buffer, kind: string): Promise<JSZip> {
  try {
    return await JSZip.loadAsync(bytes);
  } catch (error) {
    throw new ExtractionError(`not a readable .${kind} file: ${(error as Error).message}`);
  }
}

async function required(zip: JSZip, path: string, kind: string): Promise<string> {
  const entry = zip.file(path);
  if (!entry) throw new ExtractionError(`not a readable .${kind} file: ${path} is missing`);
  return entry.async('string');
}

async function optional(zip: JSZip, path: string): Promise<string> {
  return (await zip.file(path)?.async('string')) ?? '';
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

/** The text of a rich-text run list (`<t>` nodes), without phonetic guides. */
function runText(xml: string): string {
  return [...xml.replace(/<rPh\b[\s\S]*?<\/rPh>/g, '').matchAll(/<t(?:\s[^>]*)?>([\s\S]*?)<\/t>/g)].map((m) => decodeXml(m[1])).join('');
}

/** Elements named `name` (not nested in one another), with their attribute text and body. */
function elements(xml: string, name: string): Array<{ attrs: string; body: string }> {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`<${escaped}(?=[\\s/>])([^>]*?)(?:/>|>([\\s\\S]*?)</${escaped}>)`, 'g');
  return [...xml.matchAll(pattern)].map((m) => ({ attrs: m[1] ?? '', body: m[2] ?? '' }));
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

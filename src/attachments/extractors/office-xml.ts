import { SaxesParser, SaxesTagNS } from 'saxes';
import { ExtractionError } from './extraction.types';
import { characterCount, clip } from './text-output';
import { ZipArchive } from './zip-archive';

/**
 * The namespaces an Office package's parts use, Transitional (what Office writes) and Strict
 * (ISO/IEC 29500 Strict). Elements are told apart by namespace and local name, never by prefix:
 * `<row>` under a default namespace and `<x:row>` are the same element.
 */
export const NS = {
  spreadsheet: new Set(['http://schemas.openxmlformats.org/spreadsheetml/2006/main', 'http://purl.oclc.org/ooxml/spreadsheetml/main']),
  drawing: new Set(['http://schemas.openxmlformats.org/drawingml/2006/main', 'http://purl.oclc.org/ooxml/drawingml/main']),
  presentation: new Set(['http://schemas.openxmlformats.org/presentationml/2006/main', 'http://purl.oclc.org/ooxml/presentationml/main']),
  /** Of the `r:id` attributes that point into a part's relationships. */
  officeRelationships: new Set([
    'http://schemas.openxmlformats.org/officeDocument/2006/relationships',
    'http://purl.oclc.org/ooxml/officeDocument/relationships',
  ]),
  /** Of the `.rels` parts themselves (the same in Strict). */
  packageRelationships: new Set(['http://schemas.openxmlformats.org/package/2006/relationships']),
};

export type XmlElement = SaxesTagNS;

/**
 * Elements one part may nest (a sheet's cell text is 7 deep, a slide's text under nested groups a
 * few dozen). saxes looks each prefix up through every open element, so deeper nesting would make
 * a small part slow to read (a sheet of 60,000 rows that never close took minutes).
 */
export const MAX_XML_DEPTH = 128;

/** What a reader of one part is told, in document order. */
export interface XmlHandlers {
  open?(element: XmlElement): void;
  close?(element: XmlElement): void;
  /** Character data (text and CDATA), entities decoded. */
  text?(text: string): void;
}

/** True when the element is `local` in one of `namespaces`. */
export function is(element: XmlElement, namespaces: Set<string>, local: string): boolean {
  return element.local === local && namespaces.has(element.uri);
}

/** The value of the attribute `local` in one of `namespaces` (`null`: no namespace, as most attributes are). */
export function attribute(element: XmlElement, namespaces: Set<string> | null, local: string): string | undefined {
  for (const attr of Object.values(element.attributes)) {
    if (attr.local === local && (namespaces ? namespaces.has(attr.uri) : attr.prefix === '')) return attr.value;
  }
  return undefined;
}

/**
 * Streams one part of the package through saxes, a namespace-aware XML parser, as ZipArchive
 * inflates it (under its unzipped-size cap): the part is never held whole. `stop()` is asked
 * after each chunk; once it says so, nothing more is inflated or parsed (the text cap is reached).
 *
 * A part that is not well-formed XML fails the file (ExtractionError). So does one nested deeper
 * than MAX_XML_DEPTH, and one with a DOCTYPE: Office never writes one, and refusing it leaves no
 * room for entity tricks (saxes itself neither fetches external entities nor expands the ones a
 * DTD declares: it knows only the five of XML, and any other entity fails the part).
 */
export async function readXmlPart(zip: ZipArchive, path: string, kind: string, handlers: XmlHandlers, stop: () => boolean = () => false): Promise<void> {
  if (!zip.has(path)) return; // the readers check the parts a file cannot do without
  const parser = new SaxesParser({ xmlns: true });
  let depth = 0;
  parser.on('opentagstart', () => {
    if (++depth > MAX_XML_DEPTH) throw new ExtractionError(`not a readable .${kind} file: ${path} nests elements more than ${MAX_XML_DEPTH} deep`);
  });
  parser.on('doctype', () => {
    throw new ExtractionError(`not a readable .${kind} file: ${path} declares a DOCTYPE, which Office files never do`);
  });
  if (handlers.open) parser.on('opentag', handlers.open);
  parser.on('closetag', (element) => {
    depth -= 1;
    handlers.close?.(element);
  });
  if (handlers.text) {
    parser.on('text', handlers.text);
    parser.on('cdata', handlers.text);
  }
  let decoder: TextDecoder | undefined;
  try {
    for await (const chunk of zip.chunks(path)) {
      // UTF-8 unless the part starts with a UTF-16 byte-order mark; the decoder drops the mark.
      decoder ??= new TextDecoder(chunk[0] === 0xff && chunk[1] === 0xfe ? 'utf-16le' : chunk[0] === 0xfe && chunk[1] === 0xff ? 'utf-16be' : 'utf-8');
      parser.write(decoder.decode(chunk, { stream: true }));
      if (stop()) return; // leaving the loop stops the inflation
    }
    if (!decoder) return; // an empty part: nothing in it
    parser.write(decoder.decode());
    parser.close();
  } catch (error) {
    if (error instanceof ExtractionError) throw error;
    throw new ExtractionError(`not a readable .${kind} file: ${path} is not well-formed XML (${(error as Error).message})`);
  }
}

/**
 * Lines of text under a character budget (the text cap): past it, what is added is dropped and
 * `full` turns true, so the readers stop inflating and parsing.
 */
export class CappedLines {
  private readonly lines: string[] = [];
  private chars = 0;

  constructor(private readonly maxChars: number) {}

  get full(): boolean {
    return this.chars >= this.maxChars;
  }

  /** Characters still wanted. */
  get room(): number {
    return Math.max(0, this.maxChars - this.chars);
  }

  add(line: string): void {
    if (this.full) return;
    const kept = clip(line, this.room);
    this.lines.push(kept);
    this.chars += characterCount(kept) + 1; // and its line end
  }

  toString(): string {
    return this.lines.join('\n');
  }
}

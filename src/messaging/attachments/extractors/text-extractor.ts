import { extname } from 'node:path';
import { Injectable } from '@nestjs/common';
import { parseCalendar } from './calendar';
import {
  AttachmentFile, DEFAULT_EXTRACTION_LIMITS, ExtractableKind, ExtractedContent, ExtractionError, ExtractionLimits,
} from './extraction.types';
import { OcrEngine } from './ocr-engine';
import { extractDocxText, extractPptxText, extractXlsxText } from './office-text';
import { extractPdfText } from './pdf-text';
import { decodeText, htmlToText } from './plain-text';

const BY_MIME: Record<string, ExtractableKind> = {
  'application/pdf': 'pdf',
  'application/x-pdf': 'pdf',
  'image/png': 'image',
  'image/jpeg': 'image',
  'image/jpg': 'image',
  'image/pjpeg': 'image',
  'image/gif': 'image',
  'image/webp': 'image',
  'image/bmp': 'image',
  'image/x-bmp': 'image',
  'image/x-ms-bmp': 'image',
  'image/tiff': 'image',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': 'pptx',
  'text/plain': 'text',
  'text/csv': 'text',
  'text/tab-separated-values': 'text',
  'text/markdown': 'text',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/calendar': 'calendar',
  'application/ics': 'calendar',
};

const BY_EXTENSION: Record<string, ExtractableKind> = {
  '.pdf': 'pdf',
  '.png': 'image', '.jpg': 'image', '.jpeg': 'image', '.gif': 'image', '.webp': 'image', '.bmp': 'image', '.tif': 'image', '.tiff': 'image',
  '.docx': 'docx',
  '.xlsx': 'xlsx',
  '.pptx': 'pptx',
  '.txt': 'text', '.csv': 'text', '.tsv': 'text', '.md': 'text',
  '.html': 'html', '.htm': 'html',
  '.ics': 'calendar',
};

/**
 * Which extractor reads a file: its MIME type when we know it, else its file name's extension
 * (senders often label files application/octet-stream).
 */
export function extractableKind(file: { filename: string; mimeType: string }): ExtractableKind | null {
  const mime = file.mimeType.split(';')[0].trim().toLowerCase();
  return BY_MIME[mime] ?? BY_EXTENSION[extname(file.filename).toLowerCase()] ?? null;
}

/** True for the files whose attachment.extracted event carries calendarEvents. */
export function isCalendar(file: { filename: string; mimeType: string }): boolean {
  return extractableKind(file) === 'calendar';
}

/**
 * Reads the text of one attachment: PDF text layers (unpdf), image OCR (tesseract.js), Word
 * (mammoth), Excel and PowerPoint (their XML parts), plain text, HTML and iCalendar (ical.js).
 * Throws ExtractionError when the file cannot be read, has no extractor, or takes too long.
 * The text is normalised (no control characters, `\n` line ends) and cut at the character limit.
 */
@Injectable()
export class TextExtractor {
  constructor(private readonly ocr: OcrEngine) {}

  async extract(file: AttachmentFile, limits: ExtractionLimits = DEFAULT_EXTRACTION_LIMITS): Promise<ExtractedContent> {
    const kind = extractableKind(file);
    if (!kind) throw new ExtractionError(`no text extractor for ${file.mimeType} (${file.filename})`);
    const content = await withTimeout(this.read(kind, file, limits), limits.timeoutMs, kind);
    return { text: clip(normalize(content.text), limits.maxTextChars), calendarEvents: content.calendarEvents };
  }

  private async read(kind: ExtractableKind, file: AttachmentFile, limits: ExtractionLimits): Promise<ExtractedContent> {
    const charset = /;\s*charset="?([\w.:-]+)"?/i.exec(file.mimeType)?.[1] ?? null;
    const textOnly = (text: string): ExtractedContent => ({ text, calendarEvents: [] });
    switch (kind) {
      case 'pdf':
        return textOnly(await extractPdfText(file.content, { timeoutMs: limits.timeoutMs, maxChars: limits.maxTextChars }));
      case 'image':
        return textOnly(await this.ocr.recognize(file.content, limits.timeoutMs));
      case 'docx':
        return textOnly(await extractDocxText(file.content));
      case 'xlsx':
        return textOnly(await extractXlsxText(file.content));
      case 'pptx':
        return textOnly(await extractPptxText(file.content));
      case 'text':
        return textOnly(decodeText(file.content, charset));
      case 'html':
        return textOnly(htmlToText(decodeText(file.content, charset)));
      case 'calendar':
        return parseCalendar(decodeText(file.content, charset));
    }
  }
}

/** Line ends as `\n`, no NUL or other control characters (PostgreSQL text refuses NUL), no trailing blanks. */
export function normalize(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '')
    .replace(/[ \t]+$/gm, '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** At most `max` characters (code points), never splitting a surrogate pair. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text; // fewer UTF-16 units than max means fewer code points too
  let units = 0;
  let points = 0;
  while (units < text.length && points < max) {
    units += text.codePointAt(units)! > 0xffff ? 2 : 1;
    points += 1;
  }
  return text.slice(0, units);
}

/** Characters (code points) of a string, as PostgreSQL's char_length counts them. */
export function characterCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/**
 * The per-file time limit. PDF and OCR run in worker threads and stop themselves at the limit;
 * this also bounds the in-process parsers (their result is then ignored).
 */
async function withTimeout<T>(work: Promise<T>, ms: number, kind: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ExtractionError(`${kind} extraction took longer than ${ms} ms`)), ms + 1000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

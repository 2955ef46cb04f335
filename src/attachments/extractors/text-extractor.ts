import { extname } from 'node:path';
import { Injectable } from '@nestjs/common';
import { ExtractionPool } from './extraction-pool';
import { AttachmentFile, ExtractableKind, ExtractedContent, ExtractionError, ExtractionLimits } from './extraction.types';
import { checkImagePixels } from './image-pixels';
import { OcrEngine } from './ocr-engine';
import { finishText } from './text-output';

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
  '.png': 'image',
  '.jpg': 'image',
  '.jpeg': 'image',
  '.gif': 'image',
  '.webp': 'image',
  '.bmp': 'image',
  '.tif': 'image',
  '.tiff': 'image',
  '.docx': 'docx',
  '.xlsx': 'xlsx',
  '.pptx': 'pptx',
  '.txt': 'text',
  '.csv': 'text',
  '.tsv': 'text',
  '.md': 'text',
  '.html': 'html',
  '.htm': 'html',
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
 * Reads the text of one attachment: PDF text layers (unpdf), Word (mammoth), Excel and PowerPoint
 * (their XML parts), plain text, HTML and iCalendar (ical.js) in an extraction thread
 * (ExtractionPool), and image OCR in tesseract.js's own worker (OcrEngine).
 * Throws ExtractionError when the file cannot be read or has no extractor, and ExtractionLimitError
 * when a guard stopped it (zip or PDF decompression bomb, image pixels, time, memory, calendar shape).
 * The text is normalised (no control characters, `\n` line ends) and cut at the character limit.
 */
@Injectable()
export class TextExtractor {
  constructor(
    private readonly ocr: OcrEngine,
    private readonly pool: ExtractionPool,
  ) {}

  /** `limits` override the configured ones (tests). */
  async extract(file: AttachmentFile, limits: Partial<ExtractionLimits> = {}): Promise<ExtractedContent> {
    const applied: ExtractionLimits = { ...this.pool.limits, ...limits };
    const kind = extractableKind(file);
    if (!kind) throw new ExtractionError(`no text extractor for ${file.mimeType} (${file.filename})`);
    if (kind === 'image') {
      checkImagePixels(file.content, applied.maxImagePixels); // before tesseract decodes it, outside any heap limit
      return { text: finishText(await this.ocr.recognize(file.content, applied.timeoutMs), applied.maxTextChars), calendarEvents: [] };
    }
    const charset = /;\s*charset="?([\w.:-]+)"?/i.exec(file.mimeType)?.[1] ?? null;
    return this.pool.run({ kind, bytes: file.content, charset }, applied);
  }
}

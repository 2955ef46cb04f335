/** What an extractor reads. */
export interface AttachmentFile {
  filename: string;
  mimeType: string;
  content: Buffer;
}

/** One VEVENT of an .ics file, before it is stored (the row id comes from the database). */
export interface ParsedCalendarEvent {
  uid: string;
  method: string | null;
  status: string | null;
  summary: string | null;
  startsAt: Date | null;
  endsAt: Date | null;
  organizerEmail: string | null;
  attendeeEmails: string[];
}

export interface ExtractedContent {
  text: string;
  calendarEvents: ParsedCalendarEvent[];
}

/** The formats we read text from; `null` when the type has no extractor. */
export type ExtractableKind = 'pdf' | 'image' | 'docx' | 'xlsx' | 'pptx' | 'text' | 'html' | 'calendar';

/** A file we could not read (corrupt, encrypted, unsupported, too slow). The message is stored as extraction_error. */
export class ExtractionError extends Error {
  override name = 'ExtractionError';
}

/**
 * Which guard stopped a file: its unzipped size (a zip-based file's entries, a PDF's compressed
 * streams) or entry count, an image's declared pixels, its time, its memory, or the shape of an .ics
 * or of HTML (nesting).
 */
export type ExtractionLimitKind = 'unzipped-size' | 'zip-entries' | 'image-pixels' | 'time' | 'memory' | 'calendar-shape' | 'html-shape';

/**
 * A file stopped by a guard rather than found unreadable: a zip bomb, a file that runs past the
 * time limit or needs more memory than a thread may have. It is recorded like any unreadable
 * file (no text, its one event); operators see it in the warn log.
 */
export class ExtractionLimitError extends ExtractionError {
  override name = 'ExtractionLimitError';

  constructor(
    readonly limit: ExtractionLimitKind,
    message: string,
  ) {
    super(message);
  }
}

/** Limits of one extraction (docs/attachments.md, "Limits"). */
export interface ExtractionLimits {
  /** Text kept, in characters (code points). */
  maxTextChars: number;
  /** Time one file may take once its thread starts on it (OCR: once its image is handed to tesseract). */
  timeoutMs: number;
  /**
   * Bytes a zip-based file (docx, xlsx, pptx) may inflate to (declared by its central directory,
   * and actually inflated), and what a PDF's compressed streams may decode to, all added up.
   */
  maxUnzippedBytes: number;
  /** Entries a zip-based file may list in its central directory. */
  maxZipEntries: number;
  /** Pixels (width × height, as its header declares) of an image to OCR, or of an image PDF.js decodes. */
  maxImagePixels: number;
}

export const DEFAULT_EXTRACTION_LIMITS: ExtractionLimits = {
  /** About 1 MB of text: more than any message needs, less than a database row should hold. */
  maxTextChars: 1_000_000,
  timeoutMs: 60_000,
  maxUnzippedBytes: 64 * 1024 * 1024,
  maxZipEntries: 10_000,
  /** 40 megapixels: a 300 dpi scan of an A3 page is 17 MP; decoded for OCR, 40 MP is 160 MB as RGBA. */
  maxImagePixels: 40_000_000,
};

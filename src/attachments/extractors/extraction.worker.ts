import { MessagePort } from 'node:worker_threads';
import { parseCalendar } from './calendar';
import { ExtractableKind, ExtractedContent, ExtractionError, ExtractionLimitError, ExtractionLimitKind, ExtractionLimits } from './extraction.types';
import { extractDocxText, extractPptxText, extractXlsxText } from './office-text';
import { extractPdfText } from './pdf-text';
import { HtmlTooDeepError, htmlToPlainText } from '../../common/html-text';
import { decodeText } from './plain-text';
import { finishText } from './text-output';

/**
 * The code of an extraction thread (a piscina worker, see extraction-pool.ts): it reads one file of
 * any kind but images (OCR runs in tesseract's own worker) and hands back its text, normalised and
 * cut at the character limit, so no more than that crosses back to the process. It imports nothing
 * of Nest: a thread loads only the parsers.
 */

/** The kinds read in an extraction thread. */
export type PooledKind = Exclude<ExtractableKind, 'image'>;

export interface ExtractionTask {
  kind: PooledKind;
  bytes: Uint8Array;
  /** The MIME type's charset, for text, HTML and .ics files. */
  charset: string | null;
  limits: Omit<ExtractionLimits, 'timeoutMs'>;
  /** Told when the thread starts on this file: the time limit counts from then, not from the queue. */
  started: MessagePort;
}

/** A file that could not be read comes back as a value: an Error's class does not survive the thread boundary. */
export type ExtractionTaskResult = { ok: true; content: ExtractedContent } | { ok: false; message: string; limit: ExtractionLimitKind | null };

// Nothing in a thread has anything to print (PDF.js reports recoverable damage on the console);
// what matters comes back as the result.
for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) console[method] = () => undefined;

export default async function extractInThread(task: ExtractionTask): Promise<ExtractionTaskResult> {
  task.started.postMessage('started');
  task.started.close();
  try {
    const content = await read(task, Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength));
    return { ok: true, content: { text: finishText(content.text, task.limits.maxTextChars), calendarEvents: content.calendarEvents } };
  } catch (error) {
    if (!(error instanceof ExtractionError)) throw error;
    return { ok: false, message: error.message, limit: error instanceof ExtractionLimitError ? error.limit : null };
  }
}

async function read(task: ExtractionTask, bytes: Buffer): Promise<ExtractedContent> {
  const textOnly = (text: string): ExtractedContent => ({ text, calendarEvents: [] });
  switch (task.kind) {
    case 'pdf':
      return textOnly(await extractPdfText(bytes, task.limits));
    case 'docx':
      return textOnly(await extractDocxText(bytes, task.limits));
    case 'xlsx':
      return textOnly(await extractXlsxText(bytes, task.limits));
    case 'pptx':
      return textOnly(await extractPptxText(bytes, task.limits));
    case 'text':
      return textOnly(decodeText(bytes, task.charset));
    case 'html':
      return textOnly(readHtml(decodeText(bytes, task.charset)));
    case 'calendar':
      return parseCalendar(decodeText(bytes, task.charset));
  }
}

/** HTML as email bodies are read (common/html-text.ts); nesting too deep to parse in linear time is refused. */
function readHtml(html: string): string {
  try {
    return htmlToPlainText(html);
  } catch (error) {
    if (error instanceof HtmlTooDeepError) throw new ExtractionLimitError('html-shape', `${error.message}; it was not read`);
    throw error;
  }
}

import { extractText, getDocumentProxy } from 'unpdf';
import { ExtractionError, ExtractionLimits } from './extraction.types';
import { guardPdfStreams } from './pdf-stream-guard';

/**
 * The text layer of a PDF (pages separated by a blank line), read by unpdf (PDF.js). It runs in an
 * extraction thread (extraction.worker.ts): unpdf loads its PDF.js build with a dynamic import(),
 * which a worker thread does with Node's own loader (Jest's VM has none), and the thread's time and
 * memory limits stop a slow or hostile PDF. What PDF.js inflates lives outside the thread's heap,
 * so the file's compressed streams are first checked against the unzipped-size limit
 * (pdf-stream-guard.ts), and images PDF.js decodes (inside Type3 glyphs) against the pixel limit.
 */
export async function extractPdfText(bytes: Buffer, limits: Pick<ExtractionLimits, 'maxTextChars' | 'maxUnzippedBytes' | 'maxImagePixels'>): Promise<string> {
  const maxChars = limits.maxTextChars;
  const checked = await guardPdfStreams(bytes, limits);
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(new Uint8Array(checked), { isEvalSupported: false, stopAtErrors: false, verbosity: 0, maxImageSize: limits.maxImagePixels });
  } catch (error) {
    throw new ExtractionError(`not a readable PDF: ${(error as Error).message}`);
  }
  try {
    const { text } = await extractText(pdf, { mergePages: false });
    let joined = '';
    for (const page of text) {
      if (joined.length > maxChars) break;
      joined += (joined ? '\n\n' : '') + page;
    }
    return joined;
  } catch (error) {
    throw new ExtractionError(`not a readable PDF: ${(error as Error).message}`);
  } finally {
    await pdf.destroy();
  }
}

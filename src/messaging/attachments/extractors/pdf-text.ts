import { extractText, getDocumentProxy } from 'unpdf';
import { ExtractionError } from './extraction.types';

/**
 * The text layer of a PDF (pages separated by a blank line), read by unpdf (PDF.js). It runs in an
 * extraction thread (extraction.worker.ts): unpdf loads its PDF.js build with a dynamic import(),
 * which a worker thread does with Node's own loader (Jest's VM has none), and the thread's time and
 * memory limits stop a slow or hostile PDF.
 */
export async function extractPdfText(bytes: Buffer, maxChars: number): Promise<string> {
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes), { isEvalSupported: false, stopAtErrors: false, verbosity: 0 });
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

import { Worker } from 'node:worker_threads';
import { ExtractionError } from './extraction.types';

/**
 * The worker's code. unpdf loads its PDF.js build with a dynamic import(), so it runs in a worker
 * thread with Node's own loader (which also works under Jest, whose VM has no ESM loader); the
 * thread also lets a slow or hostile PDF be stopped at the time limit and bounds its memory.
 */
const PDF_WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const { getDocumentProxy, extractText } = require(workerData.unpdfPath);
  const pdf = await getDocumentProxy(new Uint8Array(workerData.bytes), { isEvalSupported: false, stopAtErrors: false, verbosity: 0 });
  try {
    const { text } = await extractText(pdf, { mergePages: false });
    let joined = '';
    for (const page of text) {
      if (joined.length > workerData.maxChars) break;
      joined += (joined ? '\\n\\n' : '') + page;
    }
    parentPort.postMessage({ text: joined.slice(0, workerData.maxChars + 1) });
  } finally {
    await pdf.destroy();
  }
})().catch((error) => parentPort.postMessage({ error: String((error && error.message) || error) }));
`;

const WORKER_MEMORY_MB = 512;

/** The text layer of a PDF (pages separated by a blank line), read by unpdf in a worker thread. */
export function extractPdfText(bytes: Buffer, options: { timeoutMs: number; maxChars: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(PDF_WORKER_SOURCE, {
      eval: true,
      workerData: { unpdfPath: require.resolve('unpdf'), bytes, maxChars: options.maxChars },
      resourceLimits: { maxOldGenerationSizeMb: WORKER_MEMORY_MB },
      stdout: true,
      stderr: true,
    });
    // PDF.js reports recoverable damage on the console: not ours to print.
    worker.stdout.resume();
    worker.stderr.resume();
    let settled = false;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      fn();
    };
    const timer = setTimeout(
      () => settle(() => reject(new ExtractionError(`PDF text extraction took longer than ${options.timeoutMs} ms`))),
      options.timeoutMs,
    );
    worker.on('message', (m: { text?: string; error?: string }) =>
      settle(() => (m.error !== undefined ? reject(new ExtractionError(`not a readable PDF: ${m.error}`)) : resolve(m.text ?? ''))),
    );
    worker.on('error', (error) => settle(() => reject(new ExtractionError(`PDF text extraction failed: ${error.message}`))));
    worker.on('exit', (code) => settle(() => reject(new ExtractionError(`PDF text extraction stopped (exit code ${code})`))));
  });
}

import { makeDocx } from '../../../../test/fixtures/attachments/make-fixtures';
import { OFFICE_MIME, slowXlsx } from '../../../../test/fixtures/attachments/make-bombs';
import { ExtractionPool } from './extraction-pool';
import { DEFAULT_EXTRACTION_LIMITS, ExtractionLimitError } from './extraction.types';
import { OcrEngine } from './ocr-engine';
import { TextExtractor } from './text-extractor';

/**
 * The guards of extraction: the time limit and the per-thread memory limit. Each ends as an
 * ExtractionLimitError naming its limit, and the pool reads the next file as usual.
 */
jest.setTimeout(60_000);

const file = (filename: string, mimeType: string, content: Buffer) => ({ filename, mimeType, content });
const limitOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: Error) => (error instanceof ExtractionLimitError ? `${error.limit}: ${error.message}` : `not a limit: ${error.message}`),
  );

describe('extraction guards', () => {
  const ocr = new OcrEngine();
  const pool = new ExtractionPool({ threads: 2, threadMemoryMb: 512, limits: DEFAULT_EXTRACTION_LIMITS });
  const extractor = new TextExtractor(ocr, pool);
  afterAll(() => Promise.all([ocr.onApplicationShutdown(), pool.onApplicationShutdown()]));

  const good = async () => (await extractor.extract(file('memo.docx', OFFICE_MIME.docx, await makeDocx(['still here'])))).text;

  it('stops a file at the time limit in its thread, while the main thread keeps turning, and reads the next file', async () => {
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 20);
    try {
      const outcome = await limitOf(extractor.extract(file('slow.xlsx', OFFICE_MIME.xlsx, slowXlsx()), { timeoutMs: 1500 }));
      expect(outcome).toBe('time: xlsx extraction took longer than 1500 ms; its thread was stopped');
      // Parsed on the main thread (as before), the interval could not have fired during the parse.
      expect(ticks).toBeGreaterThan(10);
    } finally {
      clearInterval(ticker);
    }
    expect(await good()).toBe('still here');
  });

  it('a file that needs more memory than a thread may use kills that thread, not the process', async () => {
    const small = new ExtractionPool({ threads: 1, threadMemoryMb: 64, limits: DEFAULT_EXTRACTION_LIMITS });
    try {
      const tight = new TextExtractor(ocr, small);
      // mammoth holds a large document's whole tree: about 200 MB of heap for these 50,000 paragraphs.
      const big = await makeDocx(Array.from({ length: 50_000 }, (_, i) => `Paragraph ${i} of a long report, with enough words to weigh something.`));
      expect(await limitOf(tight.extract(file('big.docx', OFFICE_MIME.docx, big)))).toBe(
        'memory: docx extraction needed more than the 64 MB of memory a thread may use; its thread was stopped',
      );
      expect((await tight.extract(file('memo.docx', OFFICE_MIME.docx, await makeDocx(['after the crash'])))).text).toBe('after the crash');
    } finally {
      await small.onApplicationShutdown();
    }
  });
});

import { dirname, join } from 'node:path';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { createWorker, OEM, Worker } from 'tesseract.js';
import { ExtractionError } from './extraction.types';

/**
 * The English model shipped by the npm package @tesseract.js-data/eng. `4.0.0_best_int` is the
 * LSTM-only model, the one tesseract.js itself picks for its default LSTM engine (the `4.0.0`
 * folder adds the legacy engine's data, which we do not use). Read from disk: nothing is
 * downloaded at run time.
 */
export const ENG_LANG_PATH = join(dirname(require.resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');

/**
 * Image OCR with tesseract.js: ONE worker per process, created on first use, reused for every
 * image (one at a time), and terminated at shutdown. A worker that failed or overran its time is
 * thrown away and a fresh one is made for the next image.
 */
@Injectable()
export class OcrEngine implements OnApplicationShutdown {
  private readonly logger = new Logger(OcrEngine.name);
  private worker?: Promise<Worker>;
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;

  /** The printed text of an image (png, jpeg, gif, webp, bmp, tiff). */
  recognize(image: Buffer, timeoutMs: number): Promise<string> {
    const run = this.tail.then(() => this.recognizeNow(image, timeoutMs));
    this.tail = run.catch(() => undefined);
    return run;
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    await this.discard();
  }

  private async recognizeNow(image: Buffer, timeoutMs: number): Promise<string> {
    if (this.closed) throw new ExtractionError('the OCR engine is shut down');
    const worker = await this.ensureWorker();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ExtractionError(`OCR took longer than ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const result = await Promise.race([worker.recognize(image), timeout]);
      return result.data.text;
    } catch (error) {
      await this.discard(); // a timed-out or failed worker is not trusted with the next image
      if (error instanceof ExtractionError) throw error;
      throw new ExtractionError(`not a readable image: ${describe(error)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private ensureWorker(): Promise<Worker> {
    if (!this.worker) {
      const created = createWorker('eng', OEM.LSTM_ONLY, {
        langPath: ENG_LANG_PATH,
        gzip: true,
        cacheMethod: 'none', // the model is read from the package each time a worker starts; nothing is written
        // Without a handler tesseract.js rethrows a failed job inside its message listener (an uncaught error).
        errorHandler: (error: unknown) => this.logger.debug(`tesseract job failed: ${describe(error)}`),
      });
      this.worker = created;
      created.catch(() => {
        if (this.worker === created) this.worker = undefined;
      });
    }
    return this.worker;
  }

  private async discard(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    try {
      await (await worker).terminate();
    } catch (error) {
      this.logger.warn(`could not terminate the OCR worker: ${describe(error)}`);
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

import { extname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { MessageChannel } from 'node:worker_threads';
import { Logger, OnApplicationShutdown } from '@nestjs/common';
import { Piscina } from 'piscina';
import { ExtractedContent, ExtractionError, ExtractionLimitError, ExtractionLimits } from './extraction.types';
import type { ExtractionTask, ExtractionTaskResult, PooledKind } from './extraction.worker';

/** How the pool is sized and bounded (EXTRACTION_* variables, docs/configuration.md). */
export interface ExtractionPoolSettings {
  /** Threads at most; a worker process never hands the pool more files than this at once. */
  threads: number;
  /** Old-generation heap of one thread (Worker resourceLimits.maxOldGenerationSizeMb). */
  threadMemoryMb: number;
  /** The limits of a file when the caller gives none. */
  limits: ExtractionLimits;
}

/** An idle thread exits after this; the next file starts a new one. */
const IDLE_THREAD_MS = 30_000;

/**
 * The worker file next to this one: `.js` in the build (dist/, the reliability suite's build), `.ts`
 * under ts-jest, where the thread, a plain Node thread outside Jest, compiles it with ts-node's
 * transpile-only hook (a devDependency: production never runs .ts).
 */
const WORKER_FILE = join(__dirname, `extraction.worker${extname(__filename)}`);
const WORKER_EXEC_ARGV = extname(__filename) === '.ts' ? ['--require', require.resolve('ts-node/register/transpile-only')] : undefined;

/**
 * V8's heap-size flags (`--max-old-space-size`, `--max-heap-size`, on the command line or in
 * NODE_OPTIONS) are process-wide and take precedence over a Worker's resourceLimits: with one set,
 * every extraction thread got the process's heap (4 GB instead of 128 MB) and a file that should be
 * refused for memory was extracted (test/attachments/attachment-bombs found it). V8 reads them only
 * when it sets up a new isolate's heap, so clearing them before the first thread starts gives each
 * thread its own limit back and leaves the process's heap, set up at start, as the operator asked.
 */
function leaveThreadHeapsToResourceLimits(): void {
  setFlagsFromString('--max-old-space-size=0');
  setFlagsFromString('--max-heap-size=0');
}

/**
 * Text extraction off the main thread: a piscina pool of worker threads (created on first use, so
 * api processes never start one). Each file gets:
 *
 * - a time limit, counted from when its thread starts on it: past it the thread is terminated
 *   (piscina aborts the task) and a fresh one takes the next file;
 * - a memory limit per thread (resourceLimits): a file that needs more kills its thread, not the
 *   process, whatever heap flags the process was started with (leaveThreadHeapsToResourceLimits);
 * - in the thread, the unzipped-size and entry caps of zip-based files, the unzipped-size cap of a
 *   PDF's compressed streams, and the text cap.
 *
 * Any of these ends as an ExtractionLimitError: the file is recorded with no text, and the Bull
 * job, its worker process and the other threads go on.
 */
export class ExtractionPool implements OnApplicationShutdown {
  private readonly logger = new Logger(ExtractionPool.name);
  private pool?: Piscina<ExtractionTask, ExtractionTaskResult>;

  constructor(readonly settings: ExtractionPoolSettings) {}

  get limits(): ExtractionLimits {
    return this.settings.limits;
  }

  async run(file: { kind: PooledKind; bytes: Buffer; charset: string | null }, limits: ExtractionLimits = this.limits): Promise<ExtractedContent> {
    const pool = this.ensurePool();
    const deadline = new AbortController();
    const { port1: started, port2 } = new MessageChannel();
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    started.once('message', () => {
      if (!finished) timer = setTimeout(() => deadline.abort(), limits.timeoutMs);
    });
    started.unref();
    let result: ExtractionTaskResult;
    try {
      result = await pool.run(
        {
          kind: file.kind,
          bytes: file.bytes,
          charset: file.charset,
          limits: {
            maxTextChars: limits.maxTextChars,
            maxUnzippedBytes: limits.maxUnzippedBytes,
            maxZipEntries: limits.maxZipEntries,
            maxImagePixels: limits.maxImagePixels,
          },
          started: port2,
        },
        { transferList: [port2], signal: deadline.signal },
      );
    } catch (error) {
      if (deadline.signal.aborted) {
        throw new ExtractionLimitError('time', `${file.kind} extraction took longer than ${limits.timeoutMs} ms; its thread was stopped`);
      }
      if ((error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        throw new ExtractionLimitError(
          'memory',
          `${file.kind} extraction needed more than the ${this.settings.threadMemoryMb} MB of memory a thread may use; its thread was stopped`,
        );
      }
      throw error; // the thread failed in a way no file should cause: the caller logs it with its stack
    } finally {
      finished = true;
      clearTimeout(timer);
      started.close();
    }
    if (!result.ok) throw result.limit ? new ExtractionLimitError(result.limit, result.message) : new ExtractionError(result.message);
    return result.content;
  }

  async onApplicationShutdown(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    await pool?.destroy();
  }

  private ensurePool(): Piscina<ExtractionTask, ExtractionTaskResult> {
    if (this.pool) return this.pool;
    leaveThreadHeapsToResourceLimits();
    const pool = new Piscina<ExtractionTask, ExtractionTaskResult>({
      filename: WORKER_FILE,
      name: 'default',
      minThreads: 0,
      maxThreads: this.settings.threads,
      idleTimeout: IDLE_THREAD_MS,
      resourceLimits: { maxOldGenerationSizeMb: this.settings.threadMemoryMb },
      execArgv: WORKER_EXEC_ARGV,
    });
    // A thread can fail after its file was settled: stopped at the time limit, it may still run
    // out of memory while being terminated. piscina then has no task to reject and emits the
    // error on the pool, which without a listener ended the whole worker process (seen in CI).
    pool.on('error', (error: Error & { code?: string }) =>
      this.logger.warn(`an extraction thread failed after its file was settled: ${error.code ?? error.name}: ${error.message}`),
    );
    this.pool = pool;
    return pool;
  }
}

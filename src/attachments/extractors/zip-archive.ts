import * as yauzl from 'yauzl';
import { ExtractionError, ExtractionLimitError } from './extraction.types';

/** The caps of one zip-based file (docx, xlsx, pptx). */
export interface ZipLimits {
  maxUnzippedBytes: number;
  maxZipEntries: number;
}

/**
 * A zip-based document (docx, xlsx, pptx) opened by yauzl with guards against decompression bombs:
 *
 * 1. Before anything is inflated: the entry count of the end-of-central-directory record, then the
 *    sizes the central directory declares for every entry, whose sum must fit the cap.
 * 2. While inflating, since declared sizes can lie: each part is streamed and counted against one
 *    budget for the whole file, and stopped as soon as it passes the cap. yauzl also stops an entry
 *    the moment it inflates past the size it declared (`validateEntrySizes`).
 *
 * Only the parts a reader asks for are inflated (never images or other media).
 */
export class ZipArchive {
  private inflated = 0;

  private constructor(
    private readonly zip: yauzl.ZipFile,
    private readonly entries: Map<string, yauzl.Entry>,
    private readonly kind: string,
    private readonly limits: ZipLimits,
  ) {}

  static async open(bytes: Buffer, kind: string, limits: ZipLimits): Promise<ZipArchive> {
    let zip: yauzl.ZipFile;
    try {
      zip = await yauzl.fromBufferPromise(bytes, { validateEntrySizes: true, strictFileNames: false });
    } catch (error) {
      throw unreadable(kind, error);
    }
    if (zip.entryCount > limits.maxZipEntries) {
      throw new ExtractionLimitError(
        'zip-entries',
        `the .${kind} file lists ${zip.entryCount} entries, more than the limit of ${limits.maxZipEntries}; it was not opened (a possible zip bomb)`,
      );
    }
    const entries = new Map<string, yauzl.Entry>();
    let declared = 0;
    try {
      for await (const entry of zip.eachEntry()) {
        declared += entry.uncompressedSize;
        if (declared > limits.maxUnzippedBytes) throw tooLarge(kind, limits, 'declares');
        if (!entries.has(entry.fileName)) entries.set(entry.fileName, entry);
      }
    } catch (error) {
      throw error instanceof ExtractionError ? error : unreadable(kind, error);
    }
    return new ZipArchive(zip, entries, kind, limits);
  }

  /** Entry names, in central-directory order. */
  names(): string[] {
    return [...this.entries.keys()];
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** The inflated bytes of one part, or null when there is no such part. */
  async read(name: string): Promise<Buffer | null> {
    if (!this.entries.has(name)) return null;
    const chunks: Buffer[] = [];
    for await (const chunk of this.chunks(name)) chunks.push(chunk);
    return Buffer.concat(chunks);
  }

  /**
   * One part's inflated bytes as they come (nothing when there is no such part), each counted
   * against the file's budget. A reader that leaves its loop early stops the inflation there.
   */
  async *chunks(name: string): AsyncGenerator<Buffer> {
    const entry = this.entries.get(name);
    if (!entry) return;
    try {
      const stream = await this.zip.openReadStreamPromise(entry);
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        this.inflated += chunk.length;
        // Leaving the loop destroys the stream: nothing more is inflated.
        if (this.inflated > this.limits.maxUnzippedBytes) throw tooLarge(this.kind, this.limits, 'inflates to');
        yield chunk;
      }
    } catch (error) {
      if (error instanceof ExtractionError) throw error;
      if (/too many bytes in the stream/.test((error as Error).message)) {
        throw new ExtractionLimitError(
          'unzipped-size',
          `the .${this.kind} file's part ${name} inflates to more than the size its header declares; it was not read (a possible zip bomb)`,
        );
      }
      throw unreadable(this.kind, error);
    }
  }
}

function tooLarge(kind: string, limits: ZipLimits, verb: 'declares' | 'inflates to'): ExtractionLimitError {
  const mb = (limits.maxUnzippedBytes / (1024 * 1024)).toLocaleString('en-US', { maximumFractionDigits: 1 });
  return new ExtractionLimitError(
    'unzipped-size',
    `the .${kind} file ${verb} more than ${mb} MB unzipped, the limit; it was not read${verb === 'declares' ? '' : ' further'} (a possible zip bomb)`,
  );
}

function unreadable(kind: string, error: unknown): ExtractionError {
  return new ExtractionError(`not a readable .${kind} file: ${(error as Error).message}`);
}

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
    const entry = this.entries.get(name);
    if (!entry) return null;
    const chunks: Buffer[] = [];
    try {
      const stream = await this.zip.openReadStreamPromise(entry);
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        this.inflated += chunk.length;
        // Leaving the loop destroys the stream: nothing more is inflated.
        if (this.inflated > this.limits.maxUnzippedBytes) throw tooLarge(this.kind, this.limits, 'inflates to');
        chunks.push(chunk);
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
    return Buffer.concat(chunks);
  }

  /** One part as UTF-8 text (a byte-order mark dropped), or '' when there is no such part. */
  async text(name: string): Promise<string> {
    const bytes = await this.read(name);
    return bytes ? new TextDecoder('utf-8').decode(bytes) : '';
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

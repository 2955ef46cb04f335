import { check, defineSlice, derive, integer } from '../config/settings';

const threads = integer('EXTRACTION_THREADS', { min: 1, max: 32, default: 2 });
const orgMaxThreads = integer('EXTRACTION_ORG_MAX_THREADS', { min: 1, max: 32 });

/** Attachment storage and text extraction (docs/attachments.md, "Limits"). */
export const attachmentsConfig = defineSlice(
  {
    attachments: {
      /** Attachment bytes one org may store, unless an operator set its own quota. */
      quotaBytesPerOrg: integer('ATTACHMENT_QUOTA_BYTES_PER_ORG', { min: 0, max: 2 ** 50, default: 5 * 1024 ** 3 }),
    },
    extraction: {
      /** Extraction threads per worker process, and files it extracts at once. */
      threads,
      /** Of those, how many one org's files may hold at once in a process (fairness between orgs); default: all but one, at least 1. */
      orgMaxThreads: derive([threads, orgMaxThreads], ([all, given]) => given ?? Math.max(1, all - 1)),
      /** Time one file may take once its thread (or the OCR worker) starts on it: at most 2 minutes, as a claim older than 5 is taken for a dead process's (attachment-extraction.service.ts). */
      timeoutMs: integer('EXTRACTION_TIMEOUT_MS', { min: 1000, max: 120_000, default: 60_000 }),
      /** Old-generation heap of one extraction thread. */
      threadMemoryMb: integer('EXTRACTION_THREAD_MEMORY_MB', { min: 64, max: 8192, default: 512 }),
      /** Bytes a docx/xlsx/pptx may inflate to (the sum its central directory declares, and what is actually inflated), and a PDF's compressed streams decode to. */
      maxUnzippedBytes: integer('EXTRACTION_MAX_UNZIPPED_BYTES', { min: 1024 * 1024, max: 1024 * 1024 * 1024, default: 64 * 1024 * 1024 }),
      /** Entries a docx/xlsx/pptx may list. */
      maxZipEntries: integer('EXTRACTION_MAX_ZIP_ENTRIES', { min: 1, max: 1_000_000, default: 10_000 }),
      /** Pixels (width × height as its header declares) of an image to OCR, or of an image a PDF's text extraction decodes. */
      maxImagePixels: integer('EXTRACTION_MAX_IMAGE_PIXELS', { min: 1_000_000, max: 1_000_000_000, default: 40_000_000 }),
    },
  },
  [check(orgMaxThreads, [threads], (given, all) => (given !== undefined && given > all ? `must not exceed EXTRACTION_THREADS (${all})` : undefined))],
);

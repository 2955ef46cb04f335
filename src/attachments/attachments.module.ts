import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { ConversationsModule } from '../conversations/conversations.module';
import { AttachmentStorage } from './attachment-storage';
import { AttachmentStorageRepository } from './attachment-storage.repository';
import { AttachmentDownloadController } from './attachment-download.controller';
import { AttachmentExtractionProcessor } from './attachment-extraction.processor';
import { AttachmentExtractionService, EXTRACTION_QUEUE } from './attachment-extraction.service';
import { ReadAttachmentTool } from './attachment.tools';
import { AttachmentsRepository } from './attachments.repository';
import { AttachmentsService } from './attachments.service';
import { ExtractionPool } from './extractors/extraction-pool';
import { DEFAULT_EXTRACTION_LIMITS } from './extractors/extraction.types';
import { OcrEngine } from './extractors/ocr-engine';
import { TextExtractor } from './extractors/text-extractor';

/**
 * Attachments: storage of inbound files and the org's quota (registered with conversations as
 * where inbound files go), text extraction (one Bull job per attachment, attempted once, publishing
 * attachment.extracted), the read_attachment tool and signed downloads.
 */
@Module({
  imports: [ConversationsModule, BullModule.registerQueue({ name: EXTRACTION_QUEUE })],
  controllers: [AttachmentDownloadController],
  providers: [
    AttachmentStorageRepository,
    AttachmentStorage,
    OcrEngine,
    {
      provide: ExtractionPool,
      inject: [APP_CONFIG],
      useFactory: ({ extraction }: AppConfig) =>
        new ExtractionPool({
          threads: extraction.threads,
          threadMemoryMb: extraction.threadMemoryMb,
          limits: {
            maxTextChars: DEFAULT_EXTRACTION_LIMITS.maxTextChars,
            timeoutMs: extraction.timeoutMs,
            maxUnzippedBytes: extraction.maxUnzippedBytes,
            maxZipEntries: extraction.maxZipEntries,
            maxImagePixels: extraction.maxImagePixels,
          },
        }),
    },
    TextExtractor,
    AttachmentsRepository,
    AttachmentExtractionService,
    AttachmentExtractionProcessor,
    AttachmentsService,
    ReadAttachmentTool,
  ],
  exports: [AttachmentsService, AttachmentStorage],
})
export class AttachmentsModule {}

import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { JobOptions, Queue } from 'bull';
import { DataSource, EntityManager } from 'typeorm';
import { settlesWithin } from '../common/settles-within';
import { wellFormedCopy } from '../common/well-formed';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { AttachmentExtractedData, CalendarEventData } from '../events/event-payloads';
import { toExtractedAttachment } from './attachment-view';
import { AttachmentsRepository } from './attachments.repository';
import { ServiceMetrics } from '../ops/metrics/service-metrics';
import { EventBus } from '../events/event-bus';
import { MessageDataBuilder } from '../conversations/message-data.builder';
import { ExtractedContent, ExtractionError, ExtractionLimitError, ParsedCalendarEvent } from './extractors/extraction.types';
import { isCalendar, TextExtractor } from './extractors/text-extractor';
import { characterCount } from './extractors/text-output';
import { deferralDelayMs, ExtractionFairness } from './extraction-fairness';

export const EXTRACTION_QUEUE = 'attachment-extraction';

export interface ExtractionJob {
  attachmentId: string;
  /** Times this attachment's job stepped aside for fairness between orgs (absent: none). */
  deferrals?: number;
}

/** What a job did: extracted (or failed) the file, found nothing to claim, or stepped aside for fairness. */
export type ExtractionRun = 'finished' | 'nothing to claim' | 'deferred';

/** The one job id of an attachment's extraction: Bull keeps at most one job per id, so at most one per attachment. */
export function extractionJobId(attachmentId: string): string {
  return `extract:${attachmentId}`;
}

/** The longest an inbound request waits for Redis to take its extraction jobs (the sweep covers the rest). */
export const ENQUEUE_WAIT_MS = 1000;
/** A pending attachment older than this with no extraction yet is re-enqueued (its job was lost). */
export const LOST_JOB_AFTER_MS = 60_000;
/**
 * A claim older than this never finished: the process died mid-extraction. Well past the per-file
 * time limit (EXTRACTION_TIMEOUT_MS, at most 2 minutes; a worker process never claims more files
 * than it has extraction threads, so none waits long for one), so a live extraction is never cut short.
 */
export const INTERRUPTED_CLAIM_AFTER_MS = 5 * 60_000;

export const INTERRUPTED_MESSAGE = 'extraction was interrupted before it finished (the worker stopped); it is not retried';

type Outcome = { status: 'extracted'; content: ExtractedContent } | { status: 'failed'; error: string };

/**
 * Attachment text extraction, attempted once per attachment (spec, event rule 2):
 *
 * 1. After an inbound message commits, one Bull job per attachment is enqueued (jobId
 *    `extract:<id>`); a sweep re-enqueues attachments still `pending` a minute later.
 * 2. The job CLAIMS the attachment: `pending` → `extracting` in one conditional UPDATE. Only the
 *    job that wins the claim parses the file; a replayed or duplicate job finds nothing to claim.
 * 3. The outcome is saved, its calendar events inserted and `attachment.extracted` published in
 *    ONE transaction, and only if the row is still `extracting`, so the event fires exactly once.
 * 4. If the process dies between claim and finish, the row stays `extracting`. It is not parsed
 *    again (the file may be what killed it): the sweep closes a claim older than 5 minutes as
 *    `failed` ("interrupted") and publishes its one event, with hasText false.
 *
 * Fairness between orgs: before the claim, the job takes a slot of its org (ExtractionFairness).
 * If the org already holds its share of this process's threads, the job claims nothing and steps
 * aside: once it has completed, the same job id is added again with a growing delay (`requeue`),
 * and the next job in the queue (another org's) is taken. Whoever adds the id (the enqueue, the
 * sweep, a deferral), Bull keeps one job for it, so an attachment never has two.
 */
@Injectable()
export class AttachmentExtractionService {
  private readonly logger = new Logger(AttachmentExtractionService.name);
  private readonly fairness: ExtractionFairness;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectQueue(EXTRACTION_QUEUE) private readonly queue: Queue<ExtractionJob>,
    private readonly bus: EventBus,
    private readonly data: MessageDataBuilder,
    private readonly extractor: TextExtractor,
    private readonly attachments: AttachmentsRepository,
    private readonly metrics: ServiceMetrics,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.fairness = new ExtractionFairness(config.extraction.orgMaxThreads);
  }

  /**
   * One job per attachment. If Redis refuses now, the sweep enqueues it a minute later. The caller
   * (an inbound webhook from the mail server or carrier) waits at most ENQUEUE_WAIT_MS: while Redis
   * is down the client retries a command for many seconds, and the sweep is there for exactly that.
   */
  async enqueue(attachmentIds: string[]): Promise<void> {
    if (attachmentIds.length === 0) return;
    const added = Promise.all(
      attachmentIds.map((attachmentId) =>
        this.queue
          .add({ attachmentId }, jobOptions(attachmentId))
          .catch((error: unknown) => this.logger.warn(`could not enqueue extraction of attachment ${attachmentId}: ${(error as Error).message}`)),
      ),
    );
    await settlesWithin(added, ENQUEUE_WAIT_MS);
  }

  /**
   * The job: take a slot of the attachment's org, claim, extract, finish. Steps aside ('deferred')
   * when the org holds its share of this process's threads; the caller then `requeue`s the job.
   */
  async runJob(job: ExtractionJob): Promise<ExtractionRun> {
    const { attachmentId } = job;
    const orgId = await this.attachments.orgOfPending(attachmentId);
    if (!orgId) return 'nothing to claim';
    if (!this.fairness.tryTake(orgId, attachmentId)) {
      this.metrics.attachmentExtractionDeferred();
      if (!job.deferrals) {
        this.logger.log(
          `attachment ${attachmentId} waits for a thread: its org ${orgId} already holds ${this.fairness.orgMaxThreads} of this process's extraction threads (EXTRACTION_ORG_MAX_THREADS)`,
        );
      }
      return 'deferred';
    }
    try {
      return (await this.extract(attachmentId)) ? 'finished' : 'nothing to claim';
    } finally {
      await this.wakeNext(orgId, this.fairness.release(orgId));
    }
  }

  /**
   * Queues a job that stepped aside again, under the same id, once Bull has completed (and so
   * removed) it: 1 s after its first deferral, doubling to 30 s, so a waiting file never spins.
   * If the process dies before this, the attachment is still `pending` and the sweep re-adds it.
   */
  async requeue(job: ExtractionJob): Promise<void> {
    const deferrals = job.deferrals ?? 0;
    await this.queue
      .add({ attachmentId: job.attachmentId, deferrals: deferrals + 1 }, { ...jobOptions(job.attachmentId), delay: deferralDelayMs(deferrals) })
      .catch((error: unknown) => this.logger.warn(`could not queue extraction of attachment ${job.attachmentId} again: ${(error as Error).message}`));
  }

  /**
   * An org's slot was given back here: the first of its attachments that stepped aside here and
   * still waits (delayed) goes to the queue now rather than at the end of its delay (behind every
   * job already waiting, so the other orgs keep their turn).
   */
  private async wakeNext(orgId: string, candidates: string[]): Promise<void> {
    for (const attachmentId of candidates.slice(0, 5)) {
      this.fairness.forget(orgId, attachmentId);
      try {
        const job = await this.queue.getJob(extractionJobId(attachmentId));
        if (job && (await job.isDelayed())) {
          await job.promote();
          return;
        }
      } catch (error) {
        this.logger.debug(`could not wake the extraction of attachment ${attachmentId}: ${(error as Error).message}`);
      }
    }
  }

  /** Claim, extract, finish. Returns false when there was nothing to claim (done, or claimed elsewhere). */
  async extract(attachmentId: string): Promise<boolean> {
    const file = await this.attachments.claim(attachmentId);
    if (!file) return false;
    let outcome: Outcome;
    try {
      const content = await this.extractor.extract({ filename: file.filename, mimeType: file.mime_type, content: file.content });
      outcome = { status: 'extracted', content };
    } catch (error) {
      if (error instanceof ExtractionLimitError) {
        // For operators: which guard, on which attachment; never the file's name or content.
        this.logger.warn(
          `attachment ${attachmentId} (${file.mime_type}, ${file.size_bytes} bytes) stopped by the ${error.limit} limit, recorded with no text: ${error.message}`,
        );
      } else if (!(error instanceof ExtractionError)) {
        this.logger.warn(`extraction of attachment ${attachmentId} failed: ${(error as Error).stack}`);
      }
      outcome = { status: 'failed', error: (error as Error).message.slice(0, 1000) };
    }
    await this.finish(attachmentId, outcome);
    return true;
  }

  /**
   * Work whose job was lost: pending attachments older than a minute are enqueued again; claims
   * older than 5 minutes (their process died) are closed as failed, with their one event.
   */
  async sweep(options: { lostJobAfterMs?: number; interruptedAfterMs?: number } = {}): Promise<{ requeued: number; interrupted: number }> {
    const lost = await this.attachments.pendingOlderThan(options.lostJobAfterMs ?? LOST_JOB_AFTER_MS);
    await this.enqueue(lost.map((r) => r.id));
    const stale = await this.attachments.claimedBefore(options.interruptedAfterMs ?? INTERRUPTED_CLAIM_AFTER_MS);
    let interrupted = 0;
    for (const row of stale) {
      if (await this.finish(row.id, { status: 'failed', error: INTERRUPTED_MESSAGE })) interrupted += 1;
    }
    return { requeued: lost.length, interrupted };
  }

  /**
   * Saves the outcome of a claimed attachment and publishes attachment.extracted, once. Text and
   * calendar fields come from the sender's file: stored with U+0000 removed and lone surrogates
   * repaired (PostgreSQL refuses them), like every other text an inbound message brings.
   */
  private async finish(attachmentId: string, result: Outcome): Promise<boolean> {
    const outcome = wellFormedCopy(result);
    const text = outcome.status === 'extracted' ? outcome.content.text : null;
    const finished = await this.dataSource.transaction(async (tx) => {
      const row = await this.attachments.finish(tx, attachmentId, {
        status: outcome.status,
        text,
        textLength: text ? characterCount(text) : 0,
        error: outcome.status === 'failed' ? outcome.error : null,
      });
      if (!row) return false; // finished by someone else (a sweep, or the job it raced): their event stands
      const calendarEvents =
        outcome.status === 'extracted' && isCalendar({ filename: row.filename, mimeType: row.mime_type })
          ? await this.insertCalendarEvents(tx, attachmentId, outcome.content)
          : [];
      const data: AttachmentExtractedData = {
        ...(await this.data.build(row.message_id, tx)),
        attachment: toExtractedAttachment(row),
        calendarEvents,
      };
      await this.bus.publish({ type: 'attachment.extracted', orgId: row.org_id, lineId: row.line_id, data }, tx);
      return true;
    });
    if (finished) this.metrics.attachmentExtracted(outcome.status);
    return finished;
  }

  private async insertCalendarEvents(tx: EntityManager, attachmentId: string, content: ExtractedContent): Promise<CalendarEventData[]> {
    const stored: CalendarEventData[] = [];
    for (const e of content.calendarEvents) {
      const id = await this.attachments.insertCalendarEvent(tx, attachmentId, e);
      stored.push(toCalendarEventData({ id, ...e }));
    }
    return stored;
  }
}

/** Attempts cover failures before the claim (database unreachable); after the claim a rerun finds nothing to do. */
function jobOptions(attachmentId: string): JobOptions {
  return {
    jobId: extractionJobId(attachmentId),
    attempts: 3,
    backoff: { type: 'exponential', delay: 5000 },
    removeOnComplete: true,
    removeOnFail: true,
  };
}

export function toCalendarEventData(e: ParsedCalendarEvent & { id: string }): CalendarEventData {
  return {
    id: e.id,
    uid: e.uid,
    method: e.method,
    status: e.status,
    summary: e.summary,
    startsAt: e.startsAt?.toISOString() ?? null,
    endsAt: e.endsAt?.toISOString() ?? null,
    organizerEmail: e.organizerEmail,
    attendeeEmails: e.attendeeEmails,
  };
}

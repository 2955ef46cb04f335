import { getQueueToken } from '@nestjs/bull';
import { Queue } from 'bull';
import { AttachmentExtractionService, EXTRACTION_QUEUE, ExtractionJob } from '../../src/attachments/attachment-extraction.service';
import { slowPdf } from '../fixtures/attachments/make-bombs';
import { toolOk } from '../support/mcp';
import { createMessagingTestApp, extractedEventsPublished, extractionIdle, Hook, inboundEmailWithFiles, MessagingTestApp } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * Issue 30: fairness between orgs in extraction. With 2 extraction threads, one org's files may
 * hold 1 of them (EXTRACTION_ORG_MAX_THREADS defaults to threads − 1). Org A sends four files that
 * each run to the time limit; org B then sends a small text file. B's file is extracted while A's
 * files still wait their turn, A never holds both threads, and every one of A's files still gets
 * its one attachment.extracted in the end (failed at the time limit): nothing is lost.
 *
 * Before the rule, A's files took both threads and B's job waited behind A's in the queue: B's
 * file was extracted only once all of A's had been claimed.
 */
jest.setTimeout(240_000);

const TIMEOUT_MS = 10_000;
const SLOW_FILES = 4;
const METRICS_TOKEN = 'test-metrics-token-fairness-0123456789';

type Part = { filename: string; mimeType: string; content: Buffer };
type Status = { id: string; extraction_status: string };

describe('extraction: fairness between orgs', () => {
  let m: MessagingTestApp;
  let a: Session;
  let b: Session;
  let hookA: Hook;
  let hookB: Hook;
  let sampler: NodeJS.Timeout | undefined;
  let mostClaimedByA = 0;

  const ingest = (s: Session, parts: Part[], tag: string): Promise<string[]> => inboundEmailWithFiles(m, s.lines[0].address, parts, tag);
  const statuses = (ids: string[]): Promise<Status[]> => m.db.query(`SELECT id, extraction_status FROM attachments WHERE id = ANY($1::uuid[])`, [ids]);

  beforeAll(async () => {
    m = await createMessagingTestApp({ EXTRACTION_THREADS: '2', EXTRACTION_TIMEOUT_MS: String(TIMEOUT_MS), METRICS_TOKEN });
    a = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
    b = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
    hookA = await Hook.register(m, a.apiKey, { events: ['attachment.extracted'] });
    hookB = await Hook.register(m, b.apiKey, { events: ['attachment.extracted'] });
  });

  afterAll(async () => {
    clearInterval(sampler);
    await m?.close();
  });

  it("extracts another org's file while one org's slow files wait their turn, and loses none of them", async () => {
    const slow = Array.from({ length: SLOW_FILES }, (_, i) => ({ filename: `slow-${i + 1}.pdf`, mimeType: 'application/pdf', content: slowPdf() }));
    const aIds = await ingest(a, slow, 'org-a');
    // How many of A's files are claimed at once, all along.
    sampler = setInterval(() => {
      void statuses(aIds)
        .then((rows) => (mostClaimedByA = Math.max(mostClaimedByA, rows.filter((r) => r.extraction_status === 'extracting').length)))
        .catch(() => undefined);
    }, 100);
    // A's files hold the threads they may (before the rule: both of them).
    await waitUntil(async () => (await statuses(aIds)).some((r) => r.extraction_status === 'extracting'), "one of org A's files to be claimed");

    const [bId] = await ingest(b, [{ filename: 'note.txt', mimeType: 'text/plain', content: Buffer.from('A short note from org B.') }], 'org-b');
    // The moment B's file is done, as one reading of all five rows.
    const atB = await waitUntil(
      async () => {
        const rows = await statuses([...aIds, bId]);
        return rows.find((r) => r.id === bId)?.extraction_status === 'extracted' && rows;
      },
      "org B's file to be extracted",
      { timeoutMs: 120_000 },
    );
    const aWhenB = atB.filter((r) => r.id !== bId).map((r) => r.extraction_status);
    // A's other files had not even been claimed: they wait, B did not wait for them.
    expect(aWhenB.filter((status) => status === 'pending').length).toBeGreaterThanOrEqual(SLOW_FILES - 2);
    const [eventB] = await hookB.waitFor(1, 'attachment.extracted');
    expect(eventB.data.attachment).toMatchObject({ id: bId, filename: 'note.txt', hasText: true });
    expect((await toolOk(m, b.apiKey, 'read_attachment', { attachmentId: bId })).text).toBe('A short note from org B.');

    // The sweep re-adds every pending attachment (here at once): A's waiting files keep one job each.
    await m.app.get(AttachmentExtractionService).sweep({ lostJobAfterMs: 0 });
    const queue = m.app.get<Queue<ExtractionJob>>(getQueueToken(EXTRACTION_QUEUE));
    const queued = (await queue.getJobs(['waiting', 'delayed', 'active'])).map((job) => job.data.attachmentId);
    expect(queued.length).toBe(new Set(queued).size);

    // Every one of A's files ends, at the time limit, with its one event.
    await hookA.waitFor(SLOW_FILES, 'attachment.extracted', 200_000);
    await extractionIdle(m);
    clearInterval(sampler);
    for (const id of aIds) {
      const read = await toolOk(m, a.apiKey, 'read_attachment', { attachmentId: id });
      expect({ id, status: read.attachment.extractionStatus, error: read.attachment.extractionError }).toEqual({
        id,
        status: 'failed',
        error: expect.stringMatching(new RegExp(`took longer than ${TIMEOUT_MS} ms`)),
      });
    }
    const published = await extractedEventsPublished(m, [...aIds, bId]);
    expect(Object.values(published)).toEqual(Array(SLOW_FILES + 1).fill(1));
    expect(
      hookA
        .events('attachment.extracted')
        .map((e) => e.data.attachment.id)
        .sort(),
    ).toEqual([...aIds].sort());
    // One org never held both threads; the jobs that stepped aside are counted.
    expect(mostClaimedByA).toBe(1);
    const metrics = await m.http().get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
    expect(metrics.status).toBe(200);
    expect(Number(/^attachment_extraction_deferrals_total (\d+)$/m.exec(metrics.text)?.[1])).toBeGreaterThanOrEqual(SLOW_FILES - 1);
  });
});

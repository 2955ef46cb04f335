import { getQueueToken } from '@nestjs/bull';
import { Queue } from 'bull';
import { EXTRACTION_QUEUE } from '../../src/attachments/attachment-extraction.service';
import { makeDocx, makeIcs, makePdf, makePng } from '../fixtures/attachments/make-fixtures';
import {
  hugeIcs,
  jpegBomb,
  manyEntriesZip,
  nestedIcs,
  OFFICE_MIME,
  PDF_BOMB_TEXT,
  pdfBomb,
  pdfPredictorBomb,
  pngBomb,
  slowPdf,
  zipBomb,
} from '../fixtures/attachments/make-bombs';
import { toolOk } from '../support/mcp';
import { createMessagingTestApp, extractedEventsPublished, extractionIdle, Hook, inboundEmailWithFiles, MessagingTestApp } from '../support/messaging-hooks';
import { createSession, Session } from '../support/session';
import { waitUntil } from '../support/wait';

/**
 * Issue 10 (5e): hostile attachments through the real ingest path. One email carries zip bombs
 * (honest and lying headers, too many entries), PDFs whose streams decode to hundreds of MB (one
 * of them encrypted), images that declare hundreds of megapixels, hostile .ics files, a file that
 * runs past the time limit and one that needs more memory than a thread may have, next to good
 * files (a PDF bomb labelled an image among them: read as its raw bytes, its page's text comes out). Every file gets
 * exactly one attachment.extracted at a real receiver: the hostile ones with hasText false, the good
 * ones with their text. The process stays up and small, and the next email is extracted as usual.
 */
jest.setTimeout(180_000);

// Long enough that the memory-hungry document reaches its heap limit first even on a busy machine.
const TIMEOUT_MS = 5_000;
const THREAD_MEMORY_MB = 96;

type Part = { filename: string; mimeType: string; content: Buffer };

describe('hostile attachments through real ingest', () => {
  let m: MessagingTestApp;
  let s: Session;
  let hook: Hook;
  let peakRss = 0;
  let baselineRss = 0;
  let sampler: NodeJS.Timeout | undefined;
  const hostile: Array<Part & { reason: RegExp }> = [];
  const good: Part[] = [];
  const ids = new Map<string, string>();

  const ingest = (parts: Part[], tag: string): Promise<string[]> => inboundEmailWithFiles(m, s.lines[0].address, parts, tag);
  const extracted = (id: string) => hook.events('attachment.extracted').filter((e) => e.data.attachment.id === id);

  beforeAll(async () => {
    m = await createMessagingTestApp({ EXTRACTION_TIMEOUT_MS: String(TIMEOUT_MS), EXTRACTION_THREAD_MEMORY_MB: String(THREAD_MEMORY_MB) });
    s = await createSession(m.admin, { lines: ['EMAIL_ACCOUNT'] });
    hook = await Hook.register(m, s.apiKey, { events: ['attachment.extracted'] });
    hostile.push(
      { filename: 'bomb.docx', mimeType: OFFICE_MIME.docx, content: await zipBomb('docx'), reason: /declares more than 64 MB unzipped/ },
      {
        filename: 'lying.xlsx',
        mimeType: OFFICE_MIME.xlsx,
        content: await zipBomb('xlsx', { headers: 'lying' }),
        reason: /inflates to more than the size its header declares/,
      },
      {
        filename: 'lying.docx',
        mimeType: 'application/octet-stream',
        content: await zipBomb('docx', { headers: 'lying' }),
        reason: /inflates to more than the size its header declares/,
      },
      { filename: 'many.pptx', mimeType: OFFICE_MIME.pptx, content: manyEntriesZip('pptx'), reason: /lists 20002 entries, more than the limit of 10000/ },
      {
        filename: 'bomb.pdf',
        mimeType: 'application/pdf',
        content: await pdfBomb(),
        reason: /^the PDF's compressed streams inflate to more than 64 MB, the limit/,
      },
      {
        filename: 'lying.pdf',
        mimeType: 'application/octet-stream',
        content: await pdfBomb({ length: 'lying' }),
        reason: /^the PDF's compressed streams inflate to more than 64 MB/,
      },
      { filename: 'columns.pdf', mimeType: 'application/pdf', content: pdfPredictorBomb(), reason: /^the PDF's compressed streams inflate to more than 64 MB/ },
      {
        filename: 'locked.pdf',
        mimeType: 'application/pdf',
        content: await pdfBomb({ encryption: 'aes-256' }),
        reason: /^the PDF's compressed streams inflate to more than 64 MB/,
      },
      {
        filename: 'huge.png',
        mimeType: 'image/png',
        content: await pngBomb(),
        reason: /^the image declares 10000 × 10000 pixels, more than the limit of 40,000,000 pixels/,
      },
      { filename: 'huge.jpg', mimeType: 'image/jpeg', content: jpegBomb(), reason: /^the image declares 30000 × 30000 pixels/ },
      { filename: 'deep.ics', mimeType: 'text/calendar', content: nestedIcs(), reason: /nests components more than 16 deep/ },
      { filename: 'huge.ics', mimeType: 'text/calendar', content: hugeIcs(25_000), reason: /has more than 20000 components/ },
      { filename: 'slow.pdf', mimeType: 'application/pdf', content: slowPdf(), reason: new RegExp(`took longer than ${TIMEOUT_MS} ms`) },
      {
        filename: 'heavy.docx',
        mimeType: OFFICE_MIME.docx,
        // mammoth needs about 200 MB of heap for these 50,000 paragraphs; a thread may have 96 MB here.
        content: await makeDocx(Array.from({ length: 50_000 }, (_, i) => `Paragraph ${i} of a long report, with enough words to weigh something.`)),
        reason: new RegExp(`needed more than the ${THREAD_MEMORY_MB} MB of memory a thread may use`),
      },
    );
    good.push(
      { filename: 'memo.docx', mimeType: OFFICE_MIME.docx, content: await makeDocx(['Good memo, read during the attack.']) },
      { filename: 'invoice.pdf', mimeType: 'application/pdf', content: makePdf() },
      { filename: 'invite.ics', mimeType: 'text/calendar', content: makeIcs() },
      { filename: 'scan.png', mimeType: 'image/png', content: makePng(['HELLO WORLD']) },
      { filename: 'labelled.pdf', mimeType: 'application/pdf', content: await pdfBomb({ extra: '/Subtype /Image /Width 10 /Height 10' }) },
    );
    global.gc?.();
    baselineRss = process.memoryUsage().rss;
    peakRss = baselineRss;
    sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 25);
  }, 120_000);

  afterAll(async () => {
    clearInterval(sampler);
    await m?.close();
  });

  it('gives each hostile file its one attachment.extracted with hasText false, and each good file its text', async () => {
    const parts = [...hostile, ...good];
    const attachmentIds = await ingest(parts, 'attack');
    parts.forEach((p, i) => ids.set(p.filename, attachmentIds[i]));
    await hook.waitFor(parts.length, 'attachment.extracted', 150_000);
    for (const p of hostile) {
      const id = ids.get(p.filename)!;
      expect({ file: p.filename, attachment: extracted(id)[0].data.attachment }).toEqual({
        file: p.filename,
        attachment: expect.objectContaining({ id, filename: p.filename, hasText: false, textLength: 0 }),
      });
      const read = await toolOk(m, s.apiKey, 'read_attachment', { attachmentId: id });
      expect({ file: p.filename, status: read.attachment.extractionStatus, text: read.text }).toEqual({ file: p.filename, status: 'failed', text: null });
      expect({ file: p.filename, error: read.attachment.extractionError }).toEqual({ file: p.filename, error: expect.stringMatching(p.reason) });
      expect(read.note).toMatch(/^No text could be extracted \(.+\); extraction is not retried/);
    }
    for (const p of good) {
      const [event] = extracted(ids.get(p.filename)!);
      expect({ file: p.filename, hasText: event.data.attachment.hasText }).toEqual({ file: p.filename, hasText: true });
    }
    const memo = await toolOk(m, s.apiKey, 'read_attachment', { attachmentId: ids.get('memo.docx') });
    expect(memo.text).toBe('Good memo, read during the attack.');
    const invite = extracted(ids.get('invite.ics')!)[0];
    expect(invite.data.calendarEvents).toHaveLength(1);
    expect((await toolOk(m, s.apiKey, 'read_attachment', { attachmentId: ids.get('scan.png') })).text).toBe('HELLO WORLD');
    const labelled = await toolOk(m, s.apiKey, 'read_attachment', { attachmentId: ids.get('labelled.pdf') });
    expect(labelled.text.startsWith(PDF_BOMB_TEXT)).toBe(true);
  });

  it('fires attachment.extracted exactly once per file', async () => {
    // Each file's event has arrived (first test); once every job has run to its end, a second one
    // would have its outbox row.
    await extractionIdle(m);
    const published = await extractedEventsPublished(m, [...ids.values()]);
    for (const [filename, id] of ids) {
      expect({ filename, outbox: published[id], received: extracted(id).length }).toEqual({ filename, outbox: 1, received: 1 });
    }
  });

  it('keeps the queue healthy: no failed or stuck jobs, and the next email is extracted as usual', async () => {
    const queue = m.app.get<Queue>(getQueueToken(EXTRACTION_QUEUE));
    const counts = await queue.getJobCounts();
    expect({ failed: counts.failed, active: counts.active, waiting: counts.waiting }).toEqual({ failed: 0, active: 0, waiting: 0 });
    const [after] = await ingest([{ filename: 'after.docx', mimeType: OFFICE_MIME.docx, content: await makeDocx(['After the attack.']) }], 'after');
    await waitUntil(() => extracted(after).length === 1, 'attachment.extracted for after.docx', { timeoutMs: 30_000 });
    expect(extracted(after)[0].data.attachment).toMatchObject({ filename: 'after.docx', hasText: true });
  });

  it('keeps the process small: the bombs never inflate in it', () => {
    const growthMb = (peakRss - baselineRss) / (1024 * 1024);
    // Two threads of 96 MB heap each, their code (PDF.js) and buffers, and the OCR engine: +330 to
    // +360 MB measured. Bombs inflated anywhere in the process would show: unguarded, the PDF and
    // image bombs here took it to +2,100 MB.
    expect(growthMb).toBeLessThan(500);
  });
});

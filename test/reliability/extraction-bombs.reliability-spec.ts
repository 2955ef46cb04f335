import { readFileSync } from 'node:fs';
import { Client } from 'pg';
import { makeDocx, makeIcs, makePdf, makeXlsx } from '../fixtures/attachments/make-fixtures';
import { hugeIcs, manyEntriesZip, nestedIcs, OFFICE_MIME, pdfBomb, pngBomb, slowPdf, zipBomb } from '../fixtures/attachments/make-bombs';
import { mixedEmail } from '../fixtures/emails/make-invite-email';
import { createTenant, ingestEmail, IngestOutcome, percentile, Tenant, toolOk } from './support/clients';
import { startStack, Stack } from './support/fixture';
import { fmt, ResultBuilder } from './support/results';
import { sleep, waitFor } from './support/stack';

/**
 * Issue 10 (5e): a stream of hostile attachments (zip bombs with honest and lying headers, a
 * package of 20,000 entries, a PDF whose stream inflates to 300 MB behind a lying /Length, a PNG of
 * 100 megapixels, .ics files nested 50,000 deep or with 25,000 events, an HTML file that runs past
 * the time limit, a document that needs more memory than a thread may have), mixed with good ones
 * (a PDF bomb labelled an image among them, whose page text must come out), through POST /ingest/email/inbound into separate api and worker processes of the
 * compiled service. Every file must get its one attachment.extracted (the hostile ones with no
 * text, the good ones with their text), the worker must stay up (same pid) and small, and no event
 * may be lost.
 */
const TIMEOUT_MS = 5000;
const THREAD_MEMORY_MB = 128;
const ROUNDS = 2;
const GOOD_PER_BOMB = 2;
const SEND_EVERY_MS = 400;
/** Worker RSS bound: the process (~250 MB) plus 2 threads × (heap + unzipped cap + code), with room to spare. */
const WORKER_RSS_BOUND_MB = 1200;

type File = { filename: string; mimeType: string; content: Buffer };
type Sent = { file: File; hostile: boolean; kind: string; outcome?: IngestOutcome; sentAt: number; ingestedAt?: number };

describe('reliability: hostile attachments', () => {
  let stack: Stack;
  let tenant: Tenant;
  const result = new ResultBuilder(
    'extraction-bombs',
    'Hostile attachments (zip, PDF and image bombs, hostile .ics, slow and memory-hungry files) mixed with good ones',
  );

  beforeAll(async () => {
    stack = await startStack({
      tag: 'bombs',
      env: { EXTRACTION_TIMEOUT_MS: String(TIMEOUT_MS), EXTRACTION_THREAD_MEMORY_MB: String(THREAD_MEMORY_MB) },
    });
    tenant = await createTenant(stack.apis[0].baseUrl, { lines: ['EMAIL_ACCOUNT'] });
  });
  afterAll(async () => {
    result.record();
    await stack?.stop();
  });

  it('neutralises every hostile file, extracts every good one, and the worker stays up and small', async () => {
    const api = stack.apis[0];
    const worker = stack.workers[0];
    const workerPid = worker.pid!;
    const { secret } = await toolOk<{ secret: string }>(api.baseUrl, tenant.apiKey, 'register_webhook', {
      url: `${stack.receiverUrl}/extracted`,
      events: ['message.received', 'attachment.extracted'],
    });
    stack.receiver.secrets.set('/extracted', [secret]);

    // Not stopped by a limit: the HTML reader is linear, so this shape (which took the old reader minutes)
    // is read at once, and holds no text. It is neutralised when it ends extracted with no text.
    const READ_IN_ONE_PASS = 'HTML of 2 MB of unclosed comments (read in one pass: no text)';
    const hostileKinds: Array<[string, () => Promise<File>]> = [
      ['docx zip bomb, 300 MB declared', async () => ({ filename: 'bomb.docx', mimeType: OFFICE_MIME.docx, content: await zipBomb('docx') })],
      [
        'xlsx zip bomb, headers lie (1 KB declared, 300 MB inside)',
        async () => ({ filename: 'lying.xlsx', mimeType: OFFICE_MIME.xlsx, content: await zipBomb('xlsx', { headers: 'lying' }) }),
      ],
      [
        'pptx zip bomb, headers lie',
        async () => ({ filename: 'lying.pptx', mimeType: OFFICE_MIME.pptx, content: await zipBomb('pptx', { headers: 'lying' }) }),
      ],
      ['pptx of 20,000 entries', async () => ({ filename: 'many.pptx', mimeType: OFFICE_MIME.pptx, content: manyEntriesZip('pptx') })],
      [
        'PDF whose content stream inflates to 300 MB, /Length lies',
        async () => ({ filename: 'bomb.pdf', mimeType: 'application/pdf', content: await pdfBomb({ length: 'lying' }) }),
      ],
      ['PNG of 10,000 × 10,000 pixels (100 KB)', async () => ({ filename: 'huge.png', mimeType: 'image/png', content: await pngBomb() })],
      ['.ics nested 50,000 deep', async () => ({ filename: 'deep.ics', mimeType: 'text/calendar', content: nestedIcs() })],
      ['.ics of 25,000 events', async () => ({ filename: 'huge.ics', mimeType: 'text/calendar', content: hugeIcs(25_000) })],
      [`a PDF that runs past the ${TIMEOUT_MS / 1000} s limit`, async () => ({ filename: 'slow.pdf', mimeType: 'application/pdf', content: slowPdf() })],
      [READ_IN_ONE_PASS, async () => ({ filename: 'comments.html', mimeType: 'text/html', content: Buffer.from(`<html><body>${'<!--'.repeat(500_000)}`) })],
      [
        `docx needing more than ${THREAD_MEMORY_MB} MB of heap`,
        async () => ({
          filename: 'heavy.docx',
          mimeType: OFFICE_MIME.docx,
          content: await makeDocx(Array.from({ length: 50_000 }, (_, i) => `Paragraph ${i} of a long report, with enough words to weigh something.`)),
        }),
      ],
    ];
    const goodKinds: Array<() => Promise<File>> = [
      async () => ({ filename: 'memo.docx', mimeType: OFFICE_MIME.docx, content: await makeDocx(['A good memo.']) }),
      async () => ({ filename: 'invoice.pdf', mimeType: 'application/pdf', content: makePdf() }),
      async () => ({ filename: 'invite.ics', mimeType: 'text/calendar', content: makeIcs() }),
      async () => ({ filename: 'figures.xlsx', mimeType: OFFICE_MIME.xlsx, content: await makeXlsx() }),
      // Read as its raw bytes (its filter disabled): the page's text comes out and nothing inflates.
      async () => ({ filename: 'labelled.pdf', mimeType: 'application/pdf', content: await pdfBomb({ extra: '/Subtype /Image /Width 10 /Height 10' }) }),
    ];
    const plan: Sent[] = [];
    let good = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const [kind, make] of hostileKinds) {
        plan.push({ file: await make(), hostile: true, kind, sentAt: 0 });
        for (let g = 0; g < GOOD_PER_BOMB; g++) {
          const file = await goodKinds[good++ % goodKinds.length]();
          plan.push({ file, hostile: false, kind: file.filename, sentAt: 0 });
        }
      }
    }
    const bombs = plan.filter((p) => p.hostile);
    const goods = plan.filter((p) => !p.hostile);
    result.load =
      `${bombs.length} hostile and ${goods.length} good attachments, one per email, one email every ${SEND_EVERY_MS} ms through POST /ingest/email/inbound; ` +
      `1 api + 1 worker process (2 extraction threads, ${TIMEOUT_MS / 1000} s and ${THREAD_MEMORY_MB} MB per file, 64 MiB unzipped cap)`;
    result.faults =
      'zip bombs (honest and lying headers), 20,000-entry package, PDF decompression bomb (lying /Length), 100-megapixel PNG, ' +
      '.ics nested 50,000 deep and of 25,000 events, a file past the time limit, a file past the thread memory limit, a PDF bomb labelled an image';
    result.badInputs = hostileKinds.map(([kind]) => kind).join('; ');

    // Worker memory, sampled from /proc while the stream runs; VmHWM is the kernel's own peak.
    const status = (field: 'VmRSS' | 'VmHWM') =>
      Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${workerPid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
    const rssBefore = status('VmRSS');
    let rssPeakSampled = rssBefore;
    const sampler = setInterval(() => {
      if (worker.alive) rssPeakSampled = Math.max(rssPeakSampled, status('VmRSS'));
    }, 100);

    const started = Date.now();
    const sending: Array<Promise<void>> = [];
    for (const [i, item] of plan.entries()) {
      item.sentAt = Date.now();
      const raw = mixedEmail(tenant.lines[0].address, [item.file], {
        messageId: `<bomb-${i}-${started}@partner.example>`,
        subject: item.kind,
        text: `file ${i}`,
      });
      sending.push(
        ingestEmail(api.baseUrl, raw).then((outcome) => {
          item.outcome = outcome;
          item.ingestedAt = Date.now();
        }),
      );
      await sleep(SEND_EVERY_MS);
    }
    await Promise.all(sending);
    const refused = plan.filter((p) => p.outcome?.status !== 201);
    expect(refused.map((p) => `${p.kind}: ${p.outcome?.status} ${p.outcome?.error ?? p.outcome?.text ?? ''}`)).toEqual([]);

    const arrivalsOf = (type: string, messageId: string) => stack.receiver.on('/extracted').filter((a) => a.type === type && a.messageId === messageId);
    const extractedFor = (messageId: string) => arrivalsOf('attachment.extracted', messageId);
    try {
      await waitFor(() => plan.every((p) => extractedFor(p.outcome!.messageId!).length > 0), 'attachment.extracted for every file', 120_000, 200);
    } finally {
      clearInterval(sampler);
      const missing = plan.filter((p) => p.outcome?.messageId && extractedFor(p.outcome.messageId).length === 0);
      const receivedMissing = plan.filter((p) => p.outcome?.messageId && arrivalsOf('message.received', p.outcome.messageId).length === 0);
      result.lost = missing.length + receivedMissing.length;
      result.figure(
        'events never received: attachment.extracted / message.received',
        `${fmt(missing.length)} / ${fmt(receivedMissing.length)}${missing.length ? ` (${missing.map((p) => p.kind).join(', ')})` : ''}`,
      );
    }
    const attackSeconds = (Date.now() - started) / 1000;
    const rssPeak = Math.max(rssPeakSampled, status('VmHWM'));

    // Outcomes as stored (the event carries the same row: hasText is textLength > 0).
    const db = new Client({ connectionString: stack.databaseUrl });
    await db.connect();
    let rows: Array<{ message_id: string; extraction_status: string; text_length: number; extraction_error: string | null; events: number }>;
    try {
      rows = (
        await db.query(
          `SELECT a.message_id, a.extraction_status, a.text_length, a.extraction_error,
                  (SELECT count(*)::int FROM outbox_events o WHERE o.type = 'attachment.extracted' AND o.data->'attachment'->>'id' = a.id::text) AS events
             FROM attachments a`,
        )
      ).rows;
    } finally {
      await db.end();
    }
    const byMessage = new Map(rows.map((r) => [r.message_id, r]));
    const outcomeOf = (p: Sent) => byMessage.get(p.outcome!.messageId!)!;
    const stopped = bombs.filter((p) => p.kind !== READ_IN_ONE_PASS);
    const neutralised = bombs.filter(
      (p) => outcomeOf(p).extraction_status === (p.kind === READ_IN_ONE_PASS ? 'extracted' : 'failed') && outcomeOf(p).text_length === 0,
    );
    const extracted = goods.filter((p) => outcomeOf(p).extraction_status === 'extracted' && outcomeOf(p).text_length > 0);
    const latencies = goods.map((p) => extractedFor(p.outcome!.messageId!)[0].at - p.ingestedAt!);
    const duplicates = stack.receiver.duplicates('/extracted');
    // The worker's log is written by pino's transport thread, so its last lines may reach the file a
    // moment after the events they go with (seen in CI: 19 of 20): read until all are there, or 5 s.
    const readStopped = () =>
      readFileSync(worker.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('recorded with no text'));
    let stoppedLines = readStopped();
    for (const deadline = Date.now() + 5000; stoppedLines.length < stopped.length && Date.now() < deadline; stoppedLines = readStopped()) await sleep(100);
    const reasons = new Map<string, number>();
    for (const p of bombs) {
      const reason =
        p.kind === READ_IN_ONE_PASS && outcomeOf(p).extraction_status === 'extracted'
          ? 'read in one pass'
          : (/declares more than|inflates to more than|compressed streams inflate to more than|pixels, more than the limit|lists \d+ entries|nests components|more than \d+ components|took longer|needed more than/.exec(
              outcomeOf(p).extraction_error ?? '',
            )?.[0] ?? `other: ${outcomeOf(p).extraction_error}`);
      reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }

    result.duplicates = `${fmt(duplicates.length)} event ids twice or more`;
    result.figure('hostile files neutralised (no text, one event)', `${fmt(neutralised.length)} of ${fmt(bombs.length)}`);
    result.figure('stopped by', [...reasons].map(([r, n]) => `${r} × ${n}`).join('; '));
    result.figure('good files extracted with their text', `${fmt(extracted.length)} of ${fmt(goods.length)}`);
    result.figure(
      'good files: ingest answered → attachment.extracted received, p50 / p99 / max',
      `${fmt(percentile(latencies, 50))} / ${fmt(percentile(latencies, 99))} / ${fmt(Math.max(...latencies))} ms`,
    );
    result.figure('attachment.extracted per file (outbox rows)', [...new Set(rows.map((r) => r.events))].join(', '));
    result.figure('worker RSS before the stream / peak during it (VmHWM)', `${fmt(rssBefore)} / ${fmt(rssPeak)} MB (bound ${fmt(WORKER_RSS_BOUND_MB)} MB)`);
    result.figure(
      'worker process',
      worker.alive && worker.pid === workerPid && worker.starts === 1
        ? `alive, same pid ${workerPid}, never restarted`
        : `NOT the same process (alive ${worker.alive}, starts ${worker.starts})`,
    );
    result.figure('warn log lines for stopped files (no file names or content)', fmt(stoppedLines.length));
    result.figure('error log lines (level ≥ 50) in the worker', fmt(worker.errorLines().length));
    result.figure(
      'stream sent over / every event received after',
      `${((plan[plan.length - 1].sentAt - started) / 1000).toFixed(1)} s / ${attackSeconds.toFixed(1)} s`,
    );
    result.notes.push(
      `The time and memory limits are lowered from their defaults (60 s, 512 MB) so the test stays short; the caps on unzipped size (64 MiB, zip files and PDF streams alike), zip entries (10,000), image pixels (40 MP) and .ics shape are the defaults.`,
      'A good file can wait behind hostile ones: each worker process extracts 2 files at once (EXTRACTION_THREADS), and a file past the time limit holds its thread for the whole limit.',
      'On a busy machine the memory-hungry document may reach the time limit first (its thread collects garbage near the heap limit before V8 gives up): either way its thread is stopped and the file recorded with no text.',
    );

    expect(worker.alive).toBe(true);
    expect(worker.pid).toBe(workerPid);
    expect(worker.starts).toBe(1);
    expect(result.lost).toBe(0);
    expect(neutralised.map((p) => p.kind)).toEqual(bombs.map((p) => p.kind));
    expect(extracted.map((p) => p.kind)).toEqual(goods.map((p) => p.kind));
    expect(rows.every((r) => r.events === 1)).toBe(true);
    expect(stoppedLines).toHaveLength(stopped.length);
    expect(stoppedLines.filter((l) => /\b(bomb|lying|many|deep|huge|slow|heavy)\.(docx|xlsx|pptx|ics|html|pdf|png)\b/.test(l))).toEqual([]);
    expect(worker.errorLines()).toEqual([]);
    expect(rssPeak).toBeLessThan(WORKER_RSS_BOUND_MB);
    result.passed = true;
  });
});

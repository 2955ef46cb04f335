import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DOCX_PARAGRAPHS,
  ICS_INVITE,
  makeAll,
  makeDocx,
  makeIcs,
  makePdf,
  makePng,
  makePptx,
  makeXlsx,
  PDF_LINES,
} from '../../../test/fixtures/attachments/make-fixtures';
import { ExtractionPool } from './extraction-pool';
import { DEFAULT_EXTRACTION_LIMITS, ExtractionError } from './extraction.types';
import { OcrEngine } from './ocr-engine';
import { extractableKind, TextExtractor } from './text-extractor';
import { characterCount, clip, normalize } from './text-output';

describe('TextExtractor', () => {
  const ocr = new OcrEngine();
  const pool = new ExtractionPool({ threads: 2, threadMemoryMb: 512, limits: DEFAULT_EXTRACTION_LIMITS });
  const extractor = new TextExtractor(ocr, pool);
  afterAll(() => Promise.all([ocr.onApplicationShutdown(), pool.onApplicationShutdown()]));

  const file = (filename: string, mimeType: string, content: Buffer) => ({ filename, mimeType, content });

  it('reads the text layer of a PDF', async () => {
    const { text, calendarEvents } = await extractor.extract(file('invoice.pdf', 'application/pdf', makePdf()));
    expect(text).toBe(PDF_LINES.join('\n'));
    expect(calendarEvents).toEqual([]);
  });

  it('refuses bytes labelled PDF that are not a PDF', async () => {
    await expect(extractor.extract(file('fake.pdf', 'application/pdf', Buffer.from('hello, not a pdf')))).rejects.toThrow(ExtractionError);
  });

  it('OCRs printed text in a PNG, reusing one worker', async () => {
    const first = await extractor.extract(file('scan.png', 'image/png', makePng(['HELLO WORLD'])));
    expect(first.text).toBe('HELLO WORLD');
    const second = await extractor.extract(file('scan.png', 'application/octet-stream', makePng()));
    expect(second.text.toLowerCase()).toContain('quarterly invoice');
    expect(second.text).toContain('4521');
  });

  it('fails an image it cannot decode, and OCRs the next one', async () => {
    await expect(extractor.extract(file('broken.png', 'image/png', Buffer.from('not an image at all')))).rejects.toThrow(ExtractionError);
    const next = await extractor.extract(file('scan.png', 'image/png', makePng(['HELLO WORLD'])));
    expect(next.text).toBe('HELLO WORLD');
  });

  it('reads Word, Excel and PowerPoint files', async () => {
    const docx = await extractor.extract(file('memo.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', await makeDocx()));
    expect(docx.text).toBe(DOCX_PARAGRAPHS.join('\n\n'));
    const xlsx = await extractor.extract(
      file(
        'figures.xlsx',
        'application/octet-stream',
        await makeXlsx(
          [
            ['Item', 'Qty'],
            ['Wid & gets', '12'],
          ],
          'Stock',
        ),
      ),
    );
    expect(xlsx.text).toBe('## Stock\nItem\tQty\nWid & gets\t12');
    const pptx = await extractor.extract(
      file('deck.pptx', 'application/vnd.openxmlformats-officedocument.presentationml.presentation', await makePptx([['Roadmap', 'Ship it'], ['Questions?']])),
    );
    expect(pptx.text).toBe('## Slide 1\nRoadmap\nShip it\n\n## Slide 2\nQuestions?');
    await expect(
      extractor.extract(file('memo.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', Buffer.from('PK nope'))),
    ).rejects.toThrow(ExtractionError);
  });

  it('reads text, CSV and HTML', async () => {
    expect((await extractor.extract(file('a.txt', 'text/plain', Buffer.from('\ufeffline one\r\nline two\u0000')))).text).toBe('line one\nline two');
    expect((await extractor.extract(file('a.csv', 'text/csv', Buffer.from('a,b\n1,2\n')))).text).toBe('a,b\n1,2');
    expect((await extractor.extract(file('l.txt', 'text/plain; charset=iso-8859-1', Buffer.from([0x63, 0x61, 0x66, 0xe9])))).text).toBe('café');
    const html =
      '<html><head><style>p{color:red}</style><script>alert(1)</script></head><body><h1>Title</h1><p>One &amp; two&nbsp;three</p><!-- x --><p>Last<br>line</p></body></html>';
    expect((await extractor.extract(file('page.html', 'text/html', Buffer.from(html)))).text).toBe('Title\n\nOne & two three\n\nLast\nline');
  });

  it('parses an .ics invite into calendar events and a text rendering', async () => {
    const { text, calendarEvents } = await extractor.extract(file('invite.ics', 'text/calendar', makeIcs()));
    expect(calendarEvents).toEqual([
      {
        uid: ICS_INVITE.uid,
        method: 'REQUEST',
        status: 'CONFIRMED',
        summary: ICS_INVITE.summary,
        startsAt: new Date(ICS_INVITE.startsAt),
        endsAt: new Date(ICS_INVITE.endsAt),
        organizerEmail: ICS_INVITE.organizer,
        attendeeEmails: ICS_INVITE.attendees,
      },
    ]);
    expect(text).toContain(`Event: ${ICS_INVITE.summary}`);
    expect(text).toContain(`Attendees: ${ICS_INVITE.attendees.join(', ')}`);
    await expect(extractor.extract(file('bad.ics', 'text/calendar', Buffer.from('BEGIN:VCALENDAR\r\nthis is not ical')))).rejects.toThrow(ExtractionError);
  });

  it('converts zoned times and reads floating ones as UTC', async () => {
    const ics = [
      'BEGIN:VCALENDAR',
      'VERSION:2.0',
      'PRODID:x',
      'METHOD:publish',
      'BEGIN:VTIMEZONE',
      'TZID:Europe/Lisbon',
      'BEGIN:STANDARD',
      'DTSTART:19701025T020000',
      'TZOFFSETFROM:+0100',
      'TZOFFSETTO:+0000',
      'RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU',
      'END:STANDARD',
      'BEGIN:DAYLIGHT',
      'DTSTART:19700329T010000',
      'TZOFFSETFROM:+0000',
      'TZOFFSETTO:+0100',
      'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU',
      'END:DAYLIGHT',
      'END:VTIMEZONE',
      'BEGIN:VEVENT',
      'UID:a',
      'DTSTART;TZID=Europe/Lisbon:20260701T100000',
      'DURATION:PT30M',
      'ORGANIZER:MAILTO:Boss@Example.com',
      'END:VEVENT',
      'BEGIN:VEVENT',
      'UID:b',
      'DTSTART;VALUE=DATE:20260704',
      'SUMMARY:Holiday',
      'END:VEVENT',
      'END:VCALENDAR',
      '',
    ].join('\r\n');
    const { calendarEvents } = await extractor.extract(file('cal.ics', 'application/octet-stream', Buffer.from(ics)));
    expect(calendarEvents.map((e) => [e.uid, e.method, e.startsAt?.toISOString(), e.endsAt?.toISOString(), e.organizerEmail])).toEqual([
      ['a', 'PUBLISH', '2026-07-01T09:00:00.000Z', '2026-07-01T09:30:00.000Z', 'Boss@Example.com'],
      ['b', 'PUBLISH', '2026-07-04T00:00:00.000Z', '2026-07-05T00:00:00.000Z', null],
    ]);
  });

  it('the committed fixture files are what make-fixtures.ts builds', async () => {
    for (const [name, bytes] of Object.entries(await makeAll())) {
      const committed = readFileSync(join(__dirname, '../../../test/fixtures/attachments', name));
      expect({ name, same: committed.equals(bytes) }).toEqual({ name, same: true });
    }
  });

  it('has no extractor for other types', async () => {
    expect(extractableKind({ filename: 'song.mp3', mimeType: 'audio/mpeg' })).toBeNull();
    await expect(extractor.extract(file('song.mp3', 'audio/mpeg', Buffer.from([1, 2, 3])))).rejects.toThrow(/no text extractor for audio\/mpeg/);
  });

  it('caps the text by characters without splitting a surrogate pair', async () => {
    expect(clip('ab😀cd', 3)).toBe('ab😀');
    expect(characterCount('ab😀cd')).toBe(5);
    const { text } = await extractor.extract(file('long.txt', 'text/plain', Buffer.from('x'.repeat(5000))), { maxTextChars: 1000, timeoutMs: 5000 });
    expect(text).toHaveLength(1000);
    expect(normalize('a \t\r\n\r\n\r\n\r\nb\u0007')).toBe('a\n\nb');
  });
});

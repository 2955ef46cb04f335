import ICAL from 'ical.js';
import { ExtractedContent, ExtractionError, ExtractionLimitError, ParsedCalendarEvent } from './extraction.types';

/** An invite with more events than this is cut (recurrence exceptions can multiply VEVENTs). */
const MAX_EVENTS = 500;
/** Real calendars nest 3 deep (VCALENDAR > VEVENT > VALARM); deeper is built to hurt a parser. */
export const MAX_CALENDAR_DEPTH = 16;
/** Components (BEGIN: lines) in one file; beyond this it is not parsed at all (only 500 events are kept anyway). */
export const MAX_CALENDAR_COMPONENTS = 20_000;

/**
 * An iCalendar file (.ics, text/calendar) read by ical.js: one calendar event per VEVENT (method
 * from the VCALENDAR's METHOD, `mailto:` stripped from organizer and attendees), and a plain-text
 * rendering of the events for read_attachment and search.
 *
 * Times: a time with a zone (UTC or a TZID the file defines) is converted to its instant; a
 * floating time (no zone) or an all-day date is read as UTC, since the file does not say where it is.
 */
export function parseCalendar(source: string): ExtractedContent {
  checkShape(source);
  let calendars: ICAL.Component[];
  try {
    const parsed = ICAL.parse(source) as unknown[];
    // One VCALENDAR parses to one jCal array; several to an array of them.
    const jcals = Array.isArray(parsed[0]) ? (parsed as unknown[][]) : [parsed];
    calendars = jcals.map((jcal) => new ICAL.Component(jcal as never));
  } catch (error) {
    throw new ExtractionError(`not a readable iCalendar file: ${(error as Error).message}`);
  }
  const events: ParsedCalendarEvent[] = [];
  const lines: string[] = [];
  for (const calendar of calendars) {
    if (calendar.name !== 'vcalendar') throw new ExtractionError('not a readable iCalendar file: no VCALENDAR');
    for (const tz of calendar.getAllSubcomponents('vtimezone')) {
      const zone = new ICAL.Timezone(tz);
      if (zone.tzid && !ICAL.TimezoneService.has(zone.tzid)) ICAL.TimezoneService.register(zone);
    }
    const method = text(calendar.getFirstPropertyValue('method'))?.toUpperCase() ?? null;
    for (const vevent of calendar.getAllSubcomponents('vevent')) {
      if (events.length >= MAX_EVENTS) break;
      const event = new ICAL.Event(vevent);
      const parsed: ParsedCalendarEvent = {
        uid: event.uid ?? '',
        method,
        status: text(vevent.getFirstPropertyValue('status'))?.toUpperCase() ?? null,
        summary: event.summary ?? null,
        startsAt: instant(event.startDate),
        endsAt: instant(event.endDate),
        organizerEmail: email(vevent.getFirstPropertyValue('organizer')),
        attendeeEmails: vevent
          .getAllProperties('attendee')
          .map((p) => email(p.getFirstValue()))
          .filter((e): e is string => !!e),
      };
      events.push(parsed);
      lines.push(...render(parsed, event));
    }
  }
  if (events.length === 0) lines.push('Calendar file with no events');
  return { text: lines.join('\n').trim(), calendarEvents: events };
}

/**
 * Refuses, before ical.js builds anything, a file nested deeper than MAX_CALENDAR_DEPTH or with more
 * than MAX_CALENDAR_COMPONENTS components: ical.js would hold all of it in memory.
 */
function checkShape(source: string): void {
  let depth = 0;
  let components = 0;
  for (const match of source.matchAll(/^(BEGIN|END):/gim)) {
    if (match[1].toUpperCase() === 'END') {
      depth = Math.max(0, depth - 1);
      continue;
    }
    depth += 1;
    components += 1;
    if (depth > MAX_CALENDAR_DEPTH) {
      throw new ExtractionLimitError('calendar-shape', `the iCalendar file nests components more than ${MAX_CALENDAR_DEPTH} deep; it was not parsed`);
    }
    if (components > MAX_CALENDAR_COMPONENTS) {
      throw new ExtractionLimitError('calendar-shape', `the iCalendar file has more than ${MAX_CALENDAR_COMPONENTS} components; it was not parsed`);
    }
  }
}

function render(e: ParsedCalendarEvent, event: ICAL.Event): string[] {
  const out = [`Event: ${e.summary ?? '(no title)'}`];
  if (e.method) out.push(`Method: ${e.method}`);
  if (e.status) out.push(`Status: ${e.status}`);
  if (e.startsAt) out.push(`Starts: ${e.startsAt.toISOString()}`);
  if (e.endsAt) out.push(`Ends: ${e.endsAt.toISOString()}`);
  if (event.location) out.push(`Location: ${event.location}`);
  if (e.organizerEmail) out.push(`Organizer: ${e.organizerEmail}`);
  if (e.attendeeEmails.length) out.push(`Attendees: ${e.attendeeEmails.join(', ')}`);
  if (event.description) out.push('', event.description);
  out.push(`UID: ${e.uid}`, '');
  return out;
}

function instant(time: ICAL.Time | null | undefined): Date | null {
  if (!time) return null;
  const floating = time.isDate || !time.zone || time.zone === ICAL.Timezone.localTimezone;
  if (floating) return new Date(Date.UTC(time.year, time.month - 1, time.day, time.hour, time.minute, time.second));
  return new Date(time.toUnixTime() * 1000);
}

function email(value: unknown): string | null {
  const s = text(value);
  if (!s) return null;
  return s.replace(/^mailto:/i, '').trim() || null;
}

function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const s = String(value).trim();
  return s || null;
}

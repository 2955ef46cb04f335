/**
 * The web app's script, served as /static/app.js (browser-script.ts bundles it; no inline script,
 * the CSP allows only 'self'). Every page works without it; with it:
 * - a form's buttons are disabled once it is submitted, so a double click posts once; a button with
 *   data-busy-text shows that text meanwhile (also said by the form's [data-busy-status] region);
 * - Copy buttons copy a field's value;
 * - times are shown in the person's time zone, relative where recent (localTimes);
 * - a page with [data-live][id] regions updates them live (docs/web.md, "Live updates").
 *
 * Type-checked against the DOM (tsconfig.json beside it) and linted with the rest of src/. It may
 * import only modules with no run-time imports of their own (the bundler refuses anything else).
 */
import { LIVE_EVENT_KINDS, SESSION_ENDED_EVENT } from '../../../live/live-event-kinds';

function disableOnSubmit(): void {
  document.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    const buttons = form.querySelectorAll<HTMLButtonElement>('button[type="submit"]');
    const status = form.querySelector('[data-busy-status]');
    setTimeout(() => {
      buttons.forEach((button) => {
        button.disabled = true;
        const busy = button.getAttribute('data-busy-text');
        if (!busy) return;
        button.textContent = busy;
        form.setAttribute('aria-busy', 'true');
        if (status) status.textContent = busy;
      });
    }, 0);
  });
}

/** Copy buttons (data-copy="<input id>"): hidden without script, where the field is simply selectable. */
function copyButtons(): void {
  document.querySelectorAll<HTMLButtonElement>('button[data-copy]').forEach((button) => {
    const id = button.getAttribute('data-copy') ?? '';
    const field = document.getElementById(id);
    const status = document.querySelector(`[data-copy-status="${id}"]`);
    if (!(field instanceof HTMLInputElement || field instanceof HTMLTextAreaElement)) return;
    button.hidden = false;
    const say = (text: string) => {
      if (status) status.textContent = text;
    };
    button.addEventListener('click', () => {
      field.focus();
      field.select();
      const fallback = () => {
        try {
          say(document.execCommand('copy') ? 'Copied.' : 'Press Ctrl+C (or Cmd+C) to copy the selected key.');
        } catch {
          say('Press Ctrl+C (or Cmd+C) to copy the selected key.');
        }
      };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(field.value).then(() => say('Copied.'), fallback);
      else fallback();
    });
  });
}

/** Below this age (or this far ahead) a relative time ("3 minutes ago"); beyond it the date and time. */
const RELATIVE_WITHIN_MS = 24 * 60 * 60 * 1000;
const RELATIVE_UNITS: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ['hour', 60 * 60 * 1000],
  ['minute', 60 * 1000],
  ['second', 1000],
];

/**
 * Times in the person's zone (the browser's), by the contract of the server's `Time` component
 * (src/web/components/time.tsx): every `<time datetime="<ISO 8601 in UTC>">UTC fallback</time>`
 * is rewritten as the same stamp in the browser's zone (`2026-02-01 18:00 GMT+9`, to the second
 * when `datetime` has seconds; in a UTC browser, the server's own text); one with
 * `data-format="relative"` says "3 minutes ago" within 24 hours instead. The full local date, time
 * and zone go in `title`.
 */
function localTimes(root: ParentNode): void {
  const full = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long' });
  const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  const now = Date.now();
  root.querySelectorAll<HTMLTimeElement>('time[datetime]').forEach((time) => {
    const at = Date.parse(time.dateTime);
    if (Number.isNaN(at)) return;
    const ago = at - now;
    const [unit, size] = RELATIVE_UNITS.find(([, ms]) => Math.abs(ago) >= ms) ?? RELATIVE_UNITS[RELATIVE_UNITS.length - 1];
    time.textContent =
      time.dataset.format === 'relative' && Math.abs(ago) < RELATIVE_WITHIN_MS
        ? relative.format(Math.trunc(ago / size), unit)
        : localStamp(at, /T\d{2}:\d{2}:\d{2}/.test(time.dateTime));
    time.title = full.format(at);
  });
}

/** A moment as the server writes one (`2026-01-31 09:00:00 UTC`), in the browser's zone and its short name. */
function localStamp(at: number, seconds: boolean): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    ...(seconds && { second: '2-digit' }),
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).formatToParts(at);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  const time = `${part('hour')}:${part('minute')}${seconds ? `:${part('second')}` : ''}`;
  return `${part('year')}-${part('month')}-${part('day')} ${time} ${part('timeZoneName')}`;
}

/**
 * Live updates (docs/web.md, "Live updates"): a page with [data-live][id] regions listens on
 * /live/events (narrowed with ?threadId= on a thread page) and, after a burst of events settles,
 * fetches itself again and swaps in each region's new content by id. Without script (or
 * EventSource) nothing happens: the page is as fresh as its last load.
 */
function liveUpdates(): void {
  const regions = document.querySelectorAll('[data-live][id]');
  if (!regions.length || !window.EventSource || !window.DOMParser || !window.fetch) return;
  const thread = document.querySelector('[data-live="thread"][data-thread-id]');
  // The page to fetch again: its own address, unless it names another (a page that answered a POST has the form's route as address).
  const page = document.querySelector('[data-live-src]');
  const url = '/live/events' + (thread ? '?threadId=' + encodeURIComponent(thread.getAttribute('data-thread-id') ?? '') : '');
  const status = document.createElement('p');
  status.className = 'live-status';
  status.setAttribute('role', 'status');
  status.setAttribute('aria-live', 'polite');
  document.body.appendChild(status);
  let newMessages = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let fetching = false;
  let again = false;
  let deferred = false;
  let failed = false;

  const editing = (region: Element): boolean => {
    const active = document.activeElement;
    return active !== null && region.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName) && (active as HTMLInputElement).type !== 'submit';
  };

  const swap = (doc: Document): void => {
    const active = document.activeElement;
    const activeId = active && active.id;
    const bottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 40;
    document.querySelectorAll('[data-live][id]').forEach((region) => {
      const fresh = doc.getElementById(region.id);
      if (!fresh) return;
      if (editing(region)) {
        deferred = true;
        return;
      }
      const scroll = region.scrollTop;
      region.replaceChildren(...Array.from(fresh.childNodes, (node) => document.importNode(node, true)));
      localTimes(region);
      region.scrollTop = scroll;
      const focused = activeId ? document.getElementById(activeId) : null;
      if (focused && region.contains(focused) && document.activeElement !== focused) focused.focus({ preventScroll: true });
    });
    if (thread && bottom) window.scrollTo(0, document.documentElement.scrollHeight);
  };

  const refresh = (): void => {
    timer = null;
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    const count = newMessages;
    newMessages = 0;
    fetch(page?.getAttribute('data-live-src') ?? location.href, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then((res) => {
        if (!res.ok || res.redirected) throw new Error(`page answered ${res.status}`);
        return res.text();
      })
      .then((html) => {
        swap(new DOMParser().parseFromString(html, 'text/html'));
        if (count) status.textContent = count === 1 ? '1 new message' : `${count} new messages`;
      })
      .catch(() => source.close())
      .then(() => {
        fetching = false;
        if (again) {
          again = false;
          schedule();
        }
      });
  };

  const schedule = (): void => {
    if (!timer) timer = setTimeout(refresh, 300);
  };

  document.addEventListener('focusout', () => {
    if (!deferred) return;
    deferred = false;
    setTimeout(schedule, 0);
  });

  const source = new EventSource(url);
  for (const kind of LIVE_EVENT_KINDS) {
    source.addEventListener(kind, () => {
      if (kind === 'message.received') newMessages += 1;
      schedule();
    });
  }
  source.addEventListener(SESSION_ENDED_EVENT, () => source.close());
  // After a dropped connection, what happened meanwhile was not told: fetch the page once it is back.
  source.addEventListener('error', () => {
    failed = true;
  });
  source.addEventListener('open', () => {
    if (!failed) return;
    failed = false;
    schedule();
  });
}

// Last, once every constant above is set (a deferred script: the document is parsed).
disableOnSubmit();
copyButtons();
localTimes(document);
// Relative times age: "now" becomes "1 minute ago" while the page stays open.
setInterval(() => localTimes(document), 30_000);
liveUpdates();

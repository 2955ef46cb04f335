/**
 * Every moment a page shows, as `<time datetime="…">` with a readable UTC text that needs no
 * script (`2026-01-31 09:00:00 UTC`, or `2026-01-31 09:00 UTC` to the minute).
 *
 * The browser script rewrites these elements in the person's own time zone. Its contract, all it
 * may rely on:
 * - Every `time[datetime]` holds a UTC moment in its `datetime` attribute, and its text is the
 *   UTC fallback. The script replaces the text and may keep the fallback in `title`.
 * - `data-format="relative"`: a moment of recent activity (a message, a draft). Said relative
 *   while recent ("2 min ago", "3 h ago"), as a date and time in the person's zone after that.
 * - No `data-format` (or `data-format="datetime"`): a date and time in the person's zone. The
 *   default writes no attribute, so the markup of a plain time stays `<time datetime="…">…</time>`.
 * - Precision follows `datetime`: with seconds (`2026-01-31T09:00:00.000Z`) the person sees
 *   seconds; without (`2026-01-31T09:00Z`, a valid HTML date and time) the minute.
 * A page without script shows the UTC text, which is correct, only not local.
 */
export function Time(props: {
  /** The moment (an ISO 8601 string in UTC, or a Date); null or undefined for none. */
  at: string | Date | null | undefined;
  /** What is shown without a moment (muted): a dash unless told (e.g. `never`). */
  none?: string;
  /** `second` (default) or `minute`. */
  precision?: 'second' | 'minute';
  /** Recent activity: relative while recent (data-format="relative"). */
  relative?: boolean;
}) {
  if (props.at === null || props.at === undefined) return <span class="muted">{props.none ?? '—'}</span>;
  const iso = typeof props.at === 'string' ? props.at : props.at.toISOString();
  const minute = props.precision === 'minute';
  return (
    <time datetime={minute ? `${iso.slice(0, 16)}Z` : iso} data-format={props.relative ? 'relative' : undefined}>
      {formatUtc(iso, props.precision ?? 'second')}
    </time>
  );
}

/** The UTC text of an ISO moment: `2026-01-31 09:00:00 UTC`, or `2026-01-31 09:00 UTC` to the minute. */
export function formatUtc(iso: string, precision: 'second' | 'minute' = 'second'): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, precision === 'minute' ? 16 : 19)} UTC`;
}

/**
 * The two date cells of a credential's row (API keys, Connected apps): when it was made (`madeLabel`:
 * Created, Connected) and when it was last used (`never` without a use), to the minute.
 */
export function MadeAndUsedCells(props: { madeLabel: string; made: Date; lastUsed: Date | null }) {
  return (
    <>
      <td data-label={props.madeLabel}>
        <Time at={props.made} precision="minute" none="never" />
      </td>
      <td data-label="Last used">
        <Time at={props.lastUsed} precision="minute" none="never" />
      </td>
    </>
  );
}

import { AttachmentReadResult } from '../../attachments/attachments.service';
import { ThreadDetail, ThreadMessage } from '../../conversations/threads/threads.service';
import { Person } from '../../identity/principal';
import { CsrfField } from '../components/csrf-field';
import { Time } from '../components/time';

/** An attachment as the thread page shows it: what read_attachment answers, or why it cannot be read. */
export type AttachmentBlock = { id: string; filename: string; mimeType: string; sizeBytes: number } & (
  { read: AttachmentReadResult; problem?: undefined } | { read?: undefined; problem: string }
);

/** What the thread page shows of a message beyond get_thread's: its subject (email) and its attachments, read. */
export interface MessageExtras {
  subject: string | null;
  attachments: AttachmentBlock[];
  attachmentCount: number;
}

/** A scheduled message: its time, and a Cancel form (cancel_scheduled_message) posted to the thread page's route. */
function ScheduledLine(props: { message: ThreadMessage; person: Person; base: string }) {
  const m = props.message;
  return (
    <form method="post" action={`${props.base}/messages/${m.id}/cancel`} class="scheduled">
      <CsrfField person={props.person} />
      <span>
        Scheduled for <Time at={m.sendAt} precision="minute" />
      </span>{' '}
      <button type="submit" class="secondary" aria-describedby={`message-${m.id}-body`}>
        Cancel sending
      </button>
    </form>
  );
}

export function MessageItem(props: { message: ThreadMessage; extras?: MessageExtras; detail: ThreadDetail; person: Person; base: string }) {
  const m = props.message;
  const inbound = m.direction === 'INBOUND';
  const senderName = inbound ? props.detail.person?.identities.find((i) => i.value === m.fromIdentity.value)?.displayName : null;
  const attachments = props.extras?.attachments ?? [];
  const more = (props.extras?.attachmentCount ?? m.attachmentCount) - attachments.length;
  return (
    <li id={`message-${m.id}`} class={`message ${inbound ? 'inbound' : 'outbound'} status-${m.status.toLowerCase()}`}>
      <div class="message-head">
        <span class="direction">{inbound ? 'Received' : m.status === 'SCHEDULED' ? 'Not sent yet' : m.status === 'CANCELED' ? 'Not sent' : 'Sent'}</span>
        <span class="sender">
          {inbound ? 'From ' : 'To '}
          {senderName ? `${senderName} ` : ''}
          <span class="mono">{inbound ? m.fromIdentity.value : m.toIdentity.value}</span>
        </span>
        <Time relative at={m.createdAt} />
        {inbound ? null : <span class={`message-status status-${m.status.toLowerCase()}`}>{statusText(m)}</span>}
      </div>
      {m.channel === 'EMAIL' && props.extras?.subject ? <p class="message-subject">{props.extras.subject}</p> : null}
      <div class="message-body" id={`message-${m.id}-body`}>
        {m.body}
      </div>
      {m.status === 'SCHEDULED' ? <ScheduledLine message={m} person={props.person} base={props.base} /> : null}
      {m.status === 'CANCELED' && m.sendAt ? (
        <p class="hint">
          Was scheduled for <Time at={m.sendAt} precision="minute" />; canceled, never sent.
        </p>
      ) : null}
      {m.truncated ? <p class="hint">The message is longer; this shows its start.</p> : null}
      {attachments.length > 0 ? (
        <ul class="attachments" aria-label="Attachments">
          {attachments.map((a) => (
            <AttachmentItem key={a.id} attachment={a} />
          ))}
        </ul>
      ) : null}
      {more > 0 ? <p class="hint">{`${more} more attachment${more === 1 ? '' : 's'} not shown.`}</p> : null}
    </li>
  );
}

function AttachmentItem(props: { attachment: AttachmentBlock }) {
  const a = props.attachment;
  return (
    <li class="attachment">
      <div class="attachment-head">
        {a.read ? (
          <a href={a.read.downloadUrl} download={a.filename}>
            {a.filename}
          </a>
        ) : (
          <span>{a.filename}</span>
        )}{' '}
        <span class="muted">
          ({a.mimeType}, {formatSize(a.sizeBytes)})
        </span>
      </div>
      {a.problem ? <p class="hint">{a.problem}</p> : null}
      {a.read ? <AttachmentContent read={a.read} /> : null}
    </li>
  );
}

function AttachmentContent(props: { read: AttachmentReadResult }) {
  const { read } = props;
  return (
    <>
      {read.calendarEvents.map((event) => (
        <dl key={event.id} class="details invite">
          <dt>Invitation</dt>
          <dd>{event.summary ?? '(no title)'}</dd>
          <dt>When</dt>
          <dd>
            <Time at={event.startsAt} /> – <Time at={event.endsAt} />
          </dd>
          {event.organizerEmail ? (
            <>
              <dt>Organizer</dt>
              <dd class="mono">{event.organizerEmail}</dd>
            </>
          ) : null}
          {event.attendeeEmails.length ? (
            <>
              <dt>Attendees</dt>
              <dd class="mono">{event.attendeeEmails.join(', ')}</dd>
            </>
          ) : null}
          {event.method || event.status ? (
            <>
              <dt>Status</dt>
              <dd>{[event.method, event.status].filter(Boolean).join(', ')}</dd>
            </>
          ) : null}
        </dl>
      ))}
      {read.text ? (
        <details class="extracted" open>
          <summary>Text of {read.attachment.filename}</summary>
          <pre class="extracted-text" tabIndex={0}>
            {read.text}
          </pre>
          {read.nextOffset !== null ? <p class="hint">The text is longer; this shows its start.</p> : null}
        </details>
      ) : read.note ? (
        <p class="hint">{read.note}</p>
      ) : null}
    </>
  );
}

/** `1.2 MB`, `340 KB`, `12 bytes`. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** An outbound message's status (Scheduled, Queued, Sent, Delivered, Canceled), or `Failed: <why>` (get_thread's error). */
function statusText(m: ThreadMessage): string {
  const status = m.status.charAt(0) + m.status.slice(1).toLowerCase();
  return m.status === 'FAILED' && m.error ? `Failed: ${m.error}` : status;
}

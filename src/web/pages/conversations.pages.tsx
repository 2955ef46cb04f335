import { LineRef } from '../../identity/account.types';
import { AgentTurnView } from '../../agents/agent.types';
import { Person } from '../../identity/principal';
import { AttachmentReadResult } from '../../attachments/attachments.service';
import { ContactView } from '../../conversations/contacts/contacts.service';
import { SearchHit } from '../../conversations/search/search.service';
import { ThreadDetail, ThreadListItem, ThreadMessage } from '../../conversations/threads/threads.service';
import { DraftActions, NOTICES } from './approvals.pages';
import { Time } from '../components/time';
import { CsrfField } from './csrf-field';
import { FieldError, NoticeBox } from './form-parts';
import { Layout } from './layout';

const CURRENT = '/conversations';

/** The filters and search of the Conversations page, as the GET form gave them (re-filled in the form). */
export interface ConversationsQuery {
  line: string;
  label: string;
  awaiting: boolean;
  q: string;
  cursor?: string;
}

/** Notices after a 303 on the thread page, by the key in `?done=` (never free text from the URL). */
export const THREAD_NOTICES = {
  sent: 'Your reply is queued; its status below follows the carrier or mail server.',
  labelled: 'The labels were saved.',
  notes: 'The notes were saved.',
  contact: 'The contact was saved.',
  // A draft decided on the thread page returns here with the Approvals page's notice.
  ...NOTICES,
} as const;
export type ThreadNotice = keyof typeof THREAD_NOTICES;

/** The thread page's form fields an error can be shown next to. */
export type ThreadField = 'body' | 'label' | 'notes' | 'displayName' | 'form';
export type ThreadErrors = Partial<Record<ThreadField, string>>;

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

/**
 * The marks the page asks search_messages' service to put around matched words: two private-use
 * characters, one to start and one to stop, where the tool writes `**` both times. A message's own
 * `**bold**` (an agent's markdown) is then text, never a match, and a mark cut off by the snippet's
 * end still closes.
 */
export const SNIPPET_MARKS = { start: '\ue000', stop: '\ue001' } as const;
const MARKED = /\ue000([^\ue000\ue001]*)(?:\ue001|$)/g;

/** A search snippet: each marked run (SNIPPET_MARKS) in <mark>, all of it as escaped text; a stray mark character is dropped. */
export function Snippet(props: { text: string }) {
  const parts: Array<string | ReturnType<typeof Mark>> = [];
  let at = 0;
  for (const match of props.text.matchAll(MARKED)) {
    parts.push(unmarked(props.text.slice(at, match.index)), <Mark key={match.index} text={match[1]} />);
    at = match.index + match[0].length;
  }
  parts.push(unmarked(props.text.slice(at)));
  return <>{parts}</>;
}

function Mark(props: { text: string }) {
  return <mark>{props.text}</mark>;
}

function unmarked(text: string): string {
  return text.replace(/[\ue000\ue001]/g, '');
}

function lineName(lines: LineRef[], lineId: string): string {
  return lines.find((l) => l.id === lineId)?.address ?? 'a line';
}

function channelName(channel: string): string {
  return channel === 'EMAIL' ? 'Email' : 'SMS';
}

function LabelChips(props: { labels: string[] }) {
  if (props.labels.length === 0) return null;
  return (
    <ul class="chips" aria-label="Labels">
      {props.labels.map((label) => (
        <li key={label} class="chip">
          {label}
        </li>
      ))}
    </ul>
  );
}

function AwaitingMarker() {
  return <span class="awaiting">Awaiting approval</span>;
}

/** The link of the next (older) page: the same filters, with the cursor. */
function olderHref(query: ConversationsQuery, cursor: string): string {
  const params = new URLSearchParams();
  if (query.q) params.set('q', query.q);
  else {
    if (query.line) params.set('line', query.line);
    if (query.label) params.set('label', query.label);
    if (query.awaiting) params.set('awaiting', '1');
  }
  params.set('cursor', cursor);
  return `${CURRENT}?${params.toString()}`;
}

/** The list and search forms (GET): no JavaScript needed. */
function Filters(props: { person: Person; labels: string[]; query: ConversationsQuery; errorField?: string }) {
  const { query, person } = props;
  const labels = query.label && !props.labels.includes(query.label) ? [query.label, ...props.labels] : props.labels;
  return (
    <div class="conversation-tools">
      <form method="get" action={CURRENT} class="inline-form search-form" role="search">
        <div class="field">
          <label for="q">Search messages</label>
          <input
            id="q"
            name="q"
            type="search"
            maxLength={500}
            value={query.q}
            aria-invalid={props.errorField === 'query' ? 'true' : undefined}
            aria-describedby="q-hint"
          />
          <p class="hint" id="q-hint">
            Every word must occur; "quoted words" together; -word excludes.
          </p>
        </div>
        <button type="submit">Search</button>
      </form>
      <form method="get" action={CURRENT} class="inline-form filter-form" aria-label="Filter conversations">
        <div class="field">
          <label for="line">Line</label>
          <select id="line" name="line" aria-invalid={props.errorField === 'lineId' ? 'true' : undefined}>
            <option value="">All lines</option>
            {person.lines.map((line) => (
              <option key={line.id} value={line.id} selected={query.line === line.id}>
                {line.address}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="label">Label</label>
          <select id="label" name="label" aria-invalid={props.errorField === 'label' ? 'true' : undefined}>
            <option value="">Any label</option>
            {labels.map((label) => (
              <option key={label} value={label} selected={query.label === label}>
                {label}
              </option>
            ))}
          </select>
        </div>
        <div class="choice">
          <input type="checkbox" id="awaiting" name="awaiting" value="1" checked={query.awaiting} />
          <label for="awaiting">Awaiting approval</label>
        </div>
        <button type="submit" class="secondary">
          Filter
        </button>
      </form>
    </div>
  );
}

/** Conversations: the person's threads (or search hits), newest activity first. */
export function ConversationsPage(props: {
  person: Person;
  labels: string[];
  query: ConversationsQuery;
  threads: ThreadListItem[];
  awaiting: Set<string>;
  hits: SearchHit[] | null;
  nextCursor: string | null;
  error?: { field?: string; message: string };
}) {
  const { person, query } = props;
  const filtered = !!(query.line || query.label || query.awaiting);
  return (
    <Layout title="Conversations" person={person} current={CURRENT}>
      <Filters person={person} labels={props.labels} query={query} errorField={props.error?.field} />
      <NoticeBox error={props.error?.message} />
      <section id="live-threads" data-live="threads" aria-label={props.hits ? 'Search results' : 'Threads'}>
        {props.hits ? (
          <SearchResults hits={props.hits} query={query} />
        ) : props.threads.length === 0 ? (
          <p>{filtered || query.cursor ? 'No conversations match these filters.' : 'No conversations yet. Messages to and from your lines show here.'}</p>
        ) : (
          <ul class="thread-list">
            {props.threads.map((item) => (
              <ThreadRow key={item.thread.id} item={item} lines={person.lines} awaiting={props.awaiting.has(item.thread.id)} />
            ))}
          </ul>
        )}
        {props.nextCursor ? (
          <p class="pager">
            <a href={olderHref(query, props.nextCursor)} rel="next">
              {props.hits ? 'More results' : 'Older'}
            </a>
          </p>
        ) : null}
      </section>
    </Layout>
  );
}

function ThreadRow(props: { item: ThreadListItem; lines: LineRef[]; awaiting: boolean }) {
  const { thread, person, labels, lastMessage } = props.item;
  const partner = person?.displayName ?? 'Unknown';
  const preview = thread.channel === 'EMAIL' && thread.subject ? thread.subject : (lastMessage?.preview ?? '');
  // Who wrote the last message: "You:" before it when it went out from your side (you, a colleague
  // on the line, or an agent acting for you); nothing when the partner wrote it, as messaging apps do.
  const writer = lastMessage?.direction === 'OUTBOUND' ? 'You' : null;
  return (
    <li class="thread-row">
      <a class="thread-link" href={`${CURRENT}/${thread.id}`}>
        <span class="partner">{partner}</span>
        <span class="preview">
          {writer ? <span class="writer">{`${writer}: `}</span> : null}
          {preview || '(no text)'}
        </span>
      </a>
      <span class="meta">
        <span class={`channel channel-${thread.channel.toLowerCase()}`}>{channelName(thread.channel)}</span>
        <span class="line">{lineName(props.lines, thread.lineId)}</span>
        <Time relative at={thread.lastMessageAt} />
        {props.awaiting ? <AwaitingMarker /> : null}
      </span>
      <LabelChips labels={labels} />
    </li>
  );
}

function SearchResults(props: { hits: SearchHit[]; query: ConversationsQuery }) {
  if (props.hits.length === 0) return <p>No messages match “{props.query.q}”.</p>;
  return (
    <ul class="thread-list search-hits">
      {props.hits.map((hit) => (
        <li key={`${hit.messageId}-${hit.attachment?.id ?? ''}`} class="thread-row">
          <a class="thread-link" href={`${CURRENT}/${hit.threadId}#message-${hit.messageId}`}>
            <span class="partner">{hit.person.displayName ?? 'Unknown'}</span>
            <span class="preview">{hit.subject ?? (hit.matchedIn === 'attachment' ? `Attachment ${hit.attachment?.filename ?? ''}` : 'SMS')}</span>
          </a>
          <p class="snippet">
            {hit.matchedIn === 'attachment' && hit.attachment ? <span class="matched-in">In {hit.attachment.filename}: </span> : null}
            <Snippet text={hit.snippet} />
          </p>
          <span class="meta">
            <span class={`channel channel-${hit.channel.toLowerCase()}`}>{channelName(hit.channel)}</span>
            <span>{hit.direction === 'INBOUND' ? 'Received' : 'Sent'}</span>
            <Time relative at={hit.createdAt} />
          </span>
        </li>
      ))}
    </ul>
  );
}

/** `1.2 MB`, `340 KB`, `12 bytes`. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** An outbound message's status (Queued, Sent, Delivered), or `Failed: <why>` (get_thread's error). */
function statusText(m: ThreadMessage): string {
  const status = m.status.charAt(0) + m.status.slice(1).toLowerCase();
  return m.status === 'FAILED' && m.error ? `Failed: ${m.error}` : status;
}

/** The drafts an agent wrote on this thread and a human must decide, oldest first, after the messages: Approvals' actions, returning here. */
function ThreadDrafts(props: { person: Person; drafts: AgentTurnView[] }) {
  if (props.drafts.length === 0) return null;
  return (
    <div class="thread-drafts">
      <h2 id="drafts-heading">Waiting for your approval</h2>
      <ol class="drafts" aria-labelledby="drafts-heading">
        {props.drafts.map((turn) => (
          <li key={turn.id} class="approval">
            <p class="approval-meta" id={`draft-${turn.id}-title`}>
              Drafted by {turn.agent.name} · <Time relative at={turn.createdAt} />
            </p>
            <div class="approval-draft draft-text" tabindex={0} role="region" aria-label={`Draft reply by ${turn.agent.name}`}>
              {turn.body}
            </div>
            <DraftActions person={props.person} turnId={turn.id} describedBy={`draft-${turn.id}-title`} from="thread" />
          </li>
        ))}
      </ol>
    </div>
  );
}

/** The thread page: messages oldest first, the reply form, labels and the partner's contact. */
export function ThreadPage(props: {
  person: Person;
  detail: ThreadDetail;
  extras: Map<string, MessageExtras>;
  contact: ContactView | null;
  /** The thread's drafts awaiting a human (agents in DRAFT mode), newest first. */
  drafts: AgentTurnView[];
  replyKey: string;
  replyBody: string;
  errors: ThreadErrors;
  notice?: string;
  /** The cursor of this page of messages, when it is not the newest. */
  cursor?: string;
}) {
  const { person, detail, errors } = props;
  const { thread } = detail;
  const base = `${CURRENT}/${thread.id}`;
  const partner = detail.person?.displayName ?? detail.person?.identities[0]?.value ?? 'Unknown';
  const title = thread.channel === 'EMAIL' && thread.subject ? thread.subject : partner;
  const messages = [...detail.messages].reverse();
  const described = (field: ThreadField, hint?: string) => [errors[field] ? `${field}-error` : '', hint ?? ''].filter(Boolean).join(' ') || undefined;
  return (
    <Layout title={title} person={person} current={CURRENT}>
      <nav aria-label="Breadcrumb" class="breadcrumb">
        <ol>
          <li>
            <a href={CURRENT}>Conversations</a>
          </li>
        </ol>
      </nav>
      <NoticeBox notice={props.notice} error={errors.form} />
      {/* Live too: the message count and the awaiting-approval marker follow the messages. */}
      <p class="thread-meta" id="live-thread-meta" data-live="thread-meta">
        <span class={`channel channel-${thread.channel.toLowerCase()}`}>{channelName(thread.channel)}</span> with <strong>{partner}</strong> on{' '}
        {lineName(person.lines, thread.lineId)} · {thread.messageCount} message{thread.messageCount === 1 ? '' : 's'}
        {props.drafts.length > 0 ? (
          <>
            {' '}
            · <AwaitingMarker />
          </>
        ) : null}
      </p>
      <div class="thread-layout">
        <div class="thread-main">
          {/* data-live-src: the page a live refresh fetches, also when this one answered a refused form (its address is then the POST route). */}
          <section
            id="live-messages"
            data-live="thread"
            data-thread-id={thread.id}
            data-live-src={props.cursor ? `${base}?cursor=${encodeURIComponent(props.cursor)}` : base}
            aria-label="Messages"
          >
            {detail.nextCursor ? (
              <p class="pager">
                <a href={`${base}?cursor=${encodeURIComponent(detail.nextCursor)}`}>Earlier messages</a>
              </p>
            ) : null}
            {messages.length === 0 ? <p>No messages.</p> : null}
            <ol class="messages">
              {messages.map((m) => (
                <MessageItem key={m.id} message={m} extras={props.extras.get(m.id)} detail={detail} />
              ))}
            </ol>
            {props.cursor ? (
              <p class="pager">
                <a href={base}>Latest messages</a>
              </p>
            ) : (
              <ThreadDrafts person={person} drafts={[...props.drafts].reverse()} />
            )}
          </section>
          <section aria-labelledby="reply-heading" class="reply">
            <h2 id="reply-heading">Reply</h2>
            <form method="post" action={`${base}/reply`} class="stack wide">
              <CsrfField person={person} />
              <input type="hidden" name="idempotencyKey" value={props.replyKey} />
              <div class="field">
                <label for="body">
                  {thread.channel === 'EMAIL' ? 'Email' : 'SMS'} to {partner}
                </label>
                <textarea
                  id="body"
                  name="body"
                  rows={5}
                  required
                  aria-invalid={errors.body ? 'true' : undefined}
                  aria-describedby={described('body', 'body-hint')}
                  value={props.replyBody}
                />
                <p class="hint" id="body-hint">
                  Sent from {lineName(person.lines, thread.lineId)}
                  {thread.channel === 'EMAIL' ? `, as a reply in this conversation${thread.subject ? ` (Re: ${thread.subject})` : ''}` : ''}.
                </p>
                <FieldError id="body-error" error={errors.body} />
              </div>
              <div class="actions">
                <button type="submit" data-busy-text="Sending…">
                  Send reply
                </button>
              </div>
            </form>
          </section>
        </div>
        <aside class="thread-side" aria-label="About this conversation">
          <section aria-labelledby="labels-heading">
            <h2 id="labels-heading">Labels</h2>
            {detail.labels.length === 0 ? <p class="muted">No labels.</p> : null}
            <ul class="chips removable">
              {detail.labels.map((label) => (
                <li key={label.name} class="chip">
                  <span>{label.name}</span>
                  <form method="post" action={`${base}/labels/remove`}>
                    <CsrfField person={person} />
                    <input type="hidden" name="label" value={label.name} />
                    <button type="submit" class="chip-remove" aria-label={`Remove label ${label.name}`}>
                      ×
                    </button>
                  </form>
                </li>
              ))}
            </ul>
            <form method="post" action={`${base}/labels`} class="inline-form">
              <CsrfField person={person} />
              <div class="field">
                <label for="label">Add a label</label>
                <input
                  id="label"
                  name="label"
                  type="text"
                  maxLength={100}
                  required
                  aria-invalid={errors.label ? 'true' : undefined}
                  aria-describedby={described('label')}
                />
                <FieldError id="label-error" error={errors.label} />
              </div>
              <button type="submit" class="secondary">
                Add
              </button>
            </form>
          </section>
          <ContactBox person={person} base={base} detail={detail} contact={props.contact} errors={errors} described={described} />
        </aside>
      </div>
    </Layout>
  );
}

function ContactBox(props: {
  person: Person;
  base: string;
  detail: ThreadDetail;
  contact: ContactView | null;
  errors: ThreadErrors;
  described: (field: ThreadField, hint?: string) => string | undefined;
}) {
  const { contact, detail, errors, described } = props;
  const identities = contact?.identities.length ? contact.identities : (detail.person?.identities ?? []);
  return (
    <section aria-labelledby="contact-heading" class="contact">
      <h2 id="contact-heading">Contact</h2>
      <p class="contact-name">{contact?.displayName ?? detail.person?.displayName ?? 'Unknown'}</p>
      <ul class="plain identities" aria-label="Identities">
        {identities.map((identity) => (
          <li key={identity.id}>
            <span class="muted">{identity.kind === 'PHONE' ? 'Phone' : 'Email'}:</span> <span class="mono">{identity.value}</span>
            {identity.displayName && identity.displayName !== contact?.displayName ? <> ({identity.displayName})</> : null}
          </li>
        ))}
      </ul>
      {contact ? (
        <form method="post" action={`${props.base}/contact/notes`} class="stack">
          <CsrfField person={props.person} />
          <div class="field">
            <label for="notes">Notes</label>
            <textarea
              id="notes"
              name="notes"
              rows={5}
              maxLength={10_000}
              aria-invalid={errors.notes ? 'true' : undefined}
              aria-describedby={described('notes')}
              value={contact.notes ?? ''}
            />
            <FieldError id="notes-error" error={errors.notes} />
          </div>
          <div>
            <button type="submit" class="secondary">
              Save notes
            </button>
          </div>
        </form>
      ) : (
        <form method="post" action={`${props.base}/contact`} class="stack">
          <CsrfField person={props.person} />
          <p class="hint">Not a contact yet: save them to keep notes.</p>
          <div class="field">
            <label for="displayName">Name</label>
            <input
              id="displayName"
              name="displayName"
              type="text"
              maxLength={200}
              required
              value={detail.person?.identities[0]?.displayName ?? ''}
              aria-invalid={errors.displayName ? 'true' : undefined}
              aria-describedby={described('displayName')}
            />
            <FieldError id="displayName-error" error={errors.displayName} />
          </div>
          <div>
            <button type="submit" class="secondary">
              Save contact
            </button>
          </div>
        </form>
      )}
    </section>
  );
}

function MessageItem(props: { message: ThreadMessage; extras?: MessageExtras; detail: ThreadDetail }) {
  const m = props.message;
  const inbound = m.direction === 'INBOUND';
  const senderName = inbound ? props.detail.person?.identities.find((i) => i.value === m.fromIdentity.value)?.displayName : null;
  const attachments = props.extras?.attachments ?? [];
  const more = (props.extras?.attachmentCount ?? m.attachmentCount) - attachments.length;
  return (
    <li id={`message-${m.id}`} class={`message ${inbound ? 'inbound' : 'outbound'} status-${m.status.toLowerCase()}`}>
      <div class="message-head">
        <span class="direction">{inbound ? 'Received' : 'Sent'}</span>
        <span class="sender">
          {inbound ? 'From ' : 'To '}
          {senderName ? `${senderName} ` : ''}
          <span class="mono">{inbound ? m.fromIdentity.value : m.toIdentity.value}</span>
        </span>
        <Time relative at={m.createdAt} />
        {inbound ? null : <span class={`message-status status-${m.status.toLowerCase()}`}>{statusText(m)}</span>}
      </div>
      {m.channel === 'EMAIL' && props.extras?.subject ? <p class="message-subject">{props.extras.subject}</p> : null}
      <div class="message-body">{m.body}</div>
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

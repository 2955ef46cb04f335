import { LineRef } from '../../identity/account.types';
import { Person } from '../../identity/principal';
import { SearchHit } from '../../conversations/search/search.service';
import { ThreadListItem } from '../../conversations/threads/threads.service';
import { Notice } from '../components/notice';
import { Layout } from '../components/layout';
import { Time } from '../components/time';
import { AwaitingMarker, channelName, lineName } from './conversation-parts';

const CURRENT = '/conversations';

/** The filters and search of the Conversations page, as the GET form gave them (re-filled in the form). */
export interface ConversationsQuery {
  line: string;
  label: string;
  awaiting: boolean;
  q: string;
  cursor?: string;
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
      <Notice error={props.error?.message} />
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

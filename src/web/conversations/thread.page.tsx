import { AgentTurnView } from '../../agents/agent.types';
import { Person } from '../../identity/principal';
import { ContactView } from '../../conversations/contacts/contacts.service';
import { ThreadDetail } from '../../conversations/threads/threads.service';
import { DraftActions, draftAuthor } from '../approvals/draft-parts';
import { Notice } from '../components/notice';
import { Layout } from '../components/layout';
import { Time } from '../components/time';
import { AwaitingMarker, channelName, lineName } from './conversation-parts';
import { ContactBox, LabelsBox, ReplyForm, ThreadErrors, ThreadField } from './thread-forms';
import { MessageExtras, MessageItem } from './thread-messages';

const CURRENT = '/conversations';

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
              Drafted by {draftAuthor(turn)} · <Time relative at={turn.createdAt} />
            </p>
            <div class="approval-draft draft-text" tabindex={0} role="region" aria-label={`Draft reply by ${draftAuthor(turn)}`}>
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
      <Notice notice={props.notice} error={errors.form} />
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
                <MessageItem key={m.id} message={m} extras={props.extras.get(m.id)} detail={detail} person={person} base={base} />
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
          <ReplyForm
            person={person}
            base={base}
            detail={detail}
            partner={partner}
            replyKey={props.replyKey}
            replyBody={props.replyBody}
            errors={errors}
            described={described}
          />
        </div>
        <aside class="thread-side" aria-label="About this conversation">
          <LabelsBox person={person} base={base} detail={detail} errors={errors} described={described} />
          <ContactBox person={person} base={base} detail={detail} contact={props.contact} errors={errors} described={described} />
        </aside>
      </div>
    </Layout>
  );
}

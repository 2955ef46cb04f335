import type { ComponentChildren } from 'preact';
import { AgentTurnView } from '../../agents/agent.types';
import { Person } from '../../identity/principal';
import { BODY_MAX, SMS_BODY_MAX } from '../../conversations/outbound/reply-body';
import { ThreadDetail, ThreadMessage } from '../../conversations/threads/threads.service';
import { Time } from '../components/time';
import { CsrfField } from './csrf-field';
import { FieldError, NoticeBox } from './form-parts';
import { Layout } from './layout';

const CURRENT = '/approvals';

/** A draft waiting for a human, with its thread as the page shows it: the partner, the line and the last messages (oldest of them first). */
export interface Draft {
  turn: AgentTurnView;
  thread: ThreadDetail['thread'];
  partner: string;
  lineAddress: string;
  recent: ThreadMessage[];
}

/** Notices after a 303, by the key in `?done=` (never free text from the URL). */
export const NOTICES = {
  approved: 'The reply was approved and is on its way.',
  edited: 'Your edited reply was approved and is on its way.',
  rejected: 'The draft was rejected: nothing was sent.',
} as const;
export type Notice = keyof typeof NOTICES;

/** Who decided a turn first, as the refusal of a second decision tells it. */
export interface Decision {
  turn: AgentTurnView;
  decidedBy: { email: string; displayName: string } | null;
}

export function conversationHref(threadId: string): string {
  return `/conversations/${threadId}`;
}

/** The thread around a draft: who it answers, on which line, and the last messages as plain text. */
function DraftContext(props: { draft: Draft; headingLevel: 'h2' | 'h3' }) {
  const { draft } = props;
  const Heading = props.headingLevel;
  const SubHeading = props.headingLevel === 'h2' ? 'h3' : 'h4';
  const id = `draft-${draft.turn.id}`;
  return (
    <>
      <Heading id={`${id}-title`}>{draft.partner}</Heading>
      <p class="approval-meta">
        {draft.thread.channel === 'SMS' ? 'SMS' : 'Email'} on <span class="mono">{draft.lineAddress}</span> · drafted by {draft.turn.agent.name} ·{' '}
        <Time relative at={draft.turn.createdAt} />
      </p>
      {draft.thread.subject !== null ? <p class="approval-meta">Subject: {draft.thread.subject}</p> : null}
      <SubHeading>Last messages</SubHeading>
      {draft.recent.length === 0 ? (
        <p class="muted">No messages yet.</p>
      ) : (
        <ol class="approval-messages">
          {draft.recent.map((m) => (
            <li key={m.id} class={`approval-message ${m.direction === 'INBOUND' ? 'inbound' : 'outbound'}`}>
              <p class="approval-message-meta">
                {m.direction === 'INBOUND' ? `From ${m.fromIdentity.value}` : `To ${m.toIdentity.value}`} · <Time relative at={m.createdAt} />
                {m.direction === 'OUTBOUND' ? ` · ${m.status.toLowerCase()}` : ''}
              </p>
              <p class="message-text">
                {m.body}
                {m.truncated ? '…' : ''}
              </p>
            </li>
          ))}
        </ol>
      )}
    </>
  );
}

/**
 * Where a decision returns the person: the Approvals list, or (`thread`) the draft's conversation,
 * when it was decided there. A fixed word, never a URL from the form: the conversation is the
 * turn's own.
 */
export type DecidedFrom = 'approvals' | 'thread';

/** `back` of a form or query: `thread` or, for anything else, the Approvals list. */
export function decidedFrom(back: unknown): DecidedFrom {
  return back === 'thread' ? 'thread' : 'approvals';
}

/** Approve, Edit and approve, Reject for one draft (the forms post to Approvals' routes), then `children`. */
export function DraftActions(props: { person: Person; turnId: string; describedBy: string; from?: DecidedFrom; children?: ComponentChildren }) {
  const { person, turnId, describedBy } = props;
  const back = props.from === 'thread' ? <input type="hidden" name="back" value="thread" /> : null;
  return (
    <div class="actions approval-actions">
      <form method="post" action={`${CURRENT}/${turnId}/approve`}>
        <CsrfField person={person} />
        {back}
        <button type="submit" aria-describedby={describedBy}>
          Approve
        </button>
      </form>
      <a class="button secondary" href={`${CURRENT}/${turnId}/edit${props.from === 'thread' ? '?back=thread' : ''}`} aria-describedby={describedBy}>
        Edit and approve
      </a>
      <form method="post" action={`${CURRENT}/${turnId}/reject`}>
        <CsrfField person={person} />
        {back}
        <button type="submit" class="danger" aria-describedby={describedBy}>
          Reject
        </button>
      </form>
      {props.children}
    </div>
  );
}

/** The Approvals page: drafts waiting for a human, oldest first, each with its thread and the three actions. */
export function ApprovalsPage(props: { person: Person; drafts: Draft[]; nextCursor: string | null; paged: boolean; notice?: string }) {
  const { person } = props;
  return (
    <Layout title="Approvals" person={person} current={CURRENT}>
      <NoticeBox notice={props.notice} />
      <p>
        Replies drafted by agents in DRAFT mode on your lines wait here, the one waiting longest first. Approve sends the draft as written, Edit and approve
        sends your version instead, Reject sends nothing.
      </p>
      {/* Live: new drafts appear and decided ones leave without a reload (docs/web.md, "Live updates"). */}
      <section id="live-approvals" data-live="approvals" aria-label="Drafts">
        {props.drafts.length === 0 ? (
          <p class="notice">{props.paged ? 'No more drafts are waiting.' : 'No drafts are waiting for approval.'}</p>
        ) : (
          <ol class="approvals" aria-label="Drafts waiting for approval">
            {props.drafts.map((draft) => (
              <li key={draft.turn.id}>
                <article class="approval" aria-labelledby={`draft-${draft.turn.id}-title`}>
                  <DraftContext draft={draft} headingLevel="h2" />
                  <h3>Draft reply</h3>
                  <div class="approval-draft draft-text" tabindex={0} role="region" aria-label={`Draft reply to ${draft.partner}`}>
                    {draft.turn.body}
                  </div>
                  <DraftActions person={person} turnId={draft.turn.id} describedBy={`draft-${draft.turn.id}-title`}>
                    <a href={conversationHref(draft.turn.threadId)}>
                      Open the conversation<span class="visually-hidden"> with {draft.partner}</span>
                    </a>
                  </DraftActions>
                </article>
              </li>
            ))}
          </ol>
        )}
        {props.paged || props.nextCursor ? (
          <nav class="pager" aria-label="More drafts">
            {props.paged ? <a href={CURRENT}>Oldest drafts</a> : null}
            {props.nextCursor ? <a href={`${CURRENT}?cursor=${encodeURIComponent(props.nextCursor)}`}>Newer drafts</a> : null}
          </nav>
        ) : null}
      </section>
    </Layout>
  );
}

/** Edit and approve: the thread, and the draft in a text box; what is in the box when the form is sent is what is sent. */
export function EditDraftPage(props: { person: Person; draft: Draft; body: string; error?: string; from: DecidedFrom }) {
  const { person, draft } = props;
  const cancel = props.from === 'thread' ? conversationHref(draft.turn.threadId) : CURRENT;
  const max = draft.thread.channel === 'SMS' ? SMS_BODY_MAX : BODY_MAX;
  return (
    <Layout title="Edit and approve" person={person} current={CURRENT}>
      <nav aria-label="Breadcrumb" class="breadcrumb">
        <ol>
          <li>{props.from === 'thread' ? <a href={cancel}>Conversation with {draft.partner}</a> : <a href={CURRENT}>Approvals</a>}</li>
        </ol>
      </nav>
      <section class="approval" aria-labelledby={`draft-${draft.turn.id}-title`}>
        <DraftContext draft={draft} headingLevel="h2" />
      </section>
      <form method="post" action={`${CURRENT}/${draft.turn.id}/edit`} class="approval-form stack wide">
        <CsrfField person={person} />
        {props.from === 'thread' ? <input type="hidden" name="back" value="thread" /> : null}
        <div class="field">
          <label for="body">Reply to send</label>
          <p class="hint" id="body-hint">
            Sent to {draft.partner} instead of the draft, which is not kept. At most {max.toLocaleString('en-US')} characters on{' '}
            {draft.thread.channel === 'SMS' ? 'an SMS' : 'an email'} thread.
          </p>
          {/* A newline right after <textarea> is dropped by the browser: this one keeps a draft that starts with a line break whole. */}
          <textarea
            id="body"
            name="body"
            rows={10}
            required
            aria-invalid={props.error ? 'true' : undefined}
            aria-describedby={props.error ? 'body-hint body-error' : 'body-hint'}
          >
            {`\n${props.body}`}
          </textarea>
          <FieldError id="body-error" error={props.error} />
        </div>
        <div class="actions">
          <button type="submit">Approve and send</button>
          <a href={cancel}>Cancel</a>
        </div>
      </form>
    </Layout>
  );
}

/** A second decision refused (409): who decided first and what became of the reply; nothing was sent again. */
export function AlreadyDecidedPage(props: { person: Person; decision: Decision; attempted: 'approve' | 'edit' | 'reject' }) {
  const { person, decision } = props;
  const { turn, decidedBy } = decision;
  const who = decidedBy === null ? null : turn.decidedByUserId === person.userId ? 'you' : `${decidedBy.displayName} (${decidedBy.email})`;
  const when = turn.decidedAt ? (
    <>
      {' '}
      at <Time relative at={turn.decidedAt} />
    </>
  ) : null;
  return (
    <Layout title="This draft was already decided" person={person} current={CURRENT}>
      <p class="notice error" role="alert">
        {turn.status === 'REJECTED' ? (
          <>
            This draft was already rejected{who ? ` by ${who}` : ''}
            {when}: nothing was sent.
          </>
        ) : turn.decidedAt === null ? (
          <>This reply was not waiting for approval: its agent sent it at once.</>
        ) : (
          <>
            This draft was already approved{who ? ` by ${who}` : ''}
            {when}: the reply below was sent once.
          </>
        )}{' '}
        {props.attempted === 'reject'
          ? 'Your rejection changed nothing.'
          : props.attempted === 'edit'
            ? 'Your edited reply was not sent.'
            : 'Nothing was sent again.'}
      </p>
      {turn.status === 'SENT' ? (
        <>
          <h2>Reply sent</h2>
          <div class="approval-draft draft-text" tabindex={0} role="region" aria-label="Reply sent">
            {turn.body}
          </div>
        </>
      ) : null}
      <p class="actions">
        <a href={CURRENT}>Back to approvals</a>
        <a href={conversationHref(turn.threadId)}>Open the conversation</a>
      </p>
    </Layout>
  );
}

import type { ComponentChildren } from 'preact';
import { AgentTurnView, REJECTION_REASON_MAX } from '../../agents/agent.types';
import { Person } from '../../identity/principal';
import { ThreadDetail, ThreadMessage } from '../../conversations/threads/threads.service';
import { CsrfField } from '../components/csrf-field';
import { Time } from '../components/time';

const CURRENT = '/approvals';

/** A draft waiting for a human, with its thread as the page shows it: the partner, the line and the last messages (oldest of them first). */
export interface Draft {
  turn: AgentTurnView;
  thread: ThreadDetail['thread'];
  partner: string;
  lineAddress: string;
  recent: ThreadMessage[];
}

/** Who decided a turn first, as the refusal of a second decision tells it. */
export interface Decision {
  turn: AgentTurnView;
  decidedBy: { email: string; displayName: string } | null;
}

/**
 * Who drafted a turn, as the pages say it: the agent by name, or a draft-only credential (an API
 * key, an app a person connected) by its name.
 */
export function draftAuthor(turn: Pick<AgentTurnView, 'agent' | 'credential'>): string {
  if (turn.credential) return `${turn.credential.name} (draft-only ${turn.credential.kind === 'API_KEY' ? 'API key' : 'app'})`;
  return turn.agent.name;
}

export function conversationHref(threadId: string): string {
  return `/conversations/${threadId}`;
}

/** The thread around a draft: who it answers, on which line, and the last messages as plain text. */
export function DraftContext(props: { draft: Draft; headingLevel: 'h2' | 'h3' }) {
  const { draft } = props;
  const Heading = props.headingLevel;
  const SubHeading = props.headingLevel === 'h2' ? 'h3' : 'h4';
  const id = `draft-${draft.turn.id}`;
  return (
    <>
      <Heading id={`${id}-title`}>{draft.partner}</Heading>
      <p class="approval-meta">
        {draft.thread.channel === 'SMS' ? 'SMS' : 'Email'} on <span class="mono">{draft.lineAddress}</span> · drafted by {draftAuthor(draft.turn)} ·{' '}
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
      <form method="post" action={`${CURRENT}/${turnId}/reject`} class="reject-form">
        <CsrfField person={person} />
        {back}
        <label for={`reason-${turnId}`}>Reason (optional)</label>
        <input type="text" id={`reason-${turnId}`} name="reason" maxLength={REJECTION_REASON_MAX} aria-describedby={`reason-${turnId}-hint`} />
        <p class="hint" id={`reason-${turnId}-hint`}>
          Kept with the draft and told to its author (agent_turn.rejected).
        </p>
        <button type="submit" class="danger" aria-describedby={describedBy}>
          Reject
        </button>
      </form>
      {props.children}
    </div>
  );
}

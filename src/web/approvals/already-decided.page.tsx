import { Person } from '../../identity/principal';
import { Layout } from '../components/layout';
import { Time } from '../components/time';
import { Decision, conversationHref } from './draft-parts';
import { Notice } from '../components/notice';

const CURRENT = '/approvals';

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
      <Notice
        error={
          <>
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
          </>
        }
      />
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

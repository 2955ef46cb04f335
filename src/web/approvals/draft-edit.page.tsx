import { Person } from '../../identity/principal';
import { BODY_MAX, SMS_BODY_MAX } from '../../conversations/outbound/reply-body';
import { CsrfField } from '../components/csrf-field';
import { FieldError } from '../components/form-parts';
import { Layout } from '../components/layout';
import { DecidedFrom, Draft, DraftContext, conversationHref } from './draft-parts';

const CURRENT = '/approvals';

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

import { Person } from '../../identity/principal';
import { ContactView } from '../../conversations/contacts/contacts.service';
import { ThreadDetail } from '../../conversations/threads/threads.service';
import { CsrfField } from '../components/csrf-field';
import { FieldError } from '../components/form-parts';
import { lineName } from './conversation-parts';
import { Time } from '../components/time';

/** The thread page's form fields an error can be shown next to. */
export type ThreadField = 'body' | 'label' | 'notes' | 'displayName' | 'form';

export type ThreadErrors = Partial<Record<ThreadField, string>>;

export function ContactBox(props: {
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

/** The reply form: the text, sent from the thread's own line, once per form (its idempotency key). */
export function ReplyForm(props: {
  person: Person;
  base: string;
  detail: ThreadDetail;
  partner: string;
  replyKey: string;
  replyBody: string;
  errors: ThreadErrors;
  described: (field: ThreadField, hint?: string) => string | undefined;
}) {
  const { person, base, partner, errors, described } = props;
  const { thread, optedOut } = props.detail;
  return (
    <section aria-labelledby="reply-heading" class="reply">
      <h2 id="reply-heading">Reply</h2>
      {optedOut ? (
        // The send gate refuses an SMS to this number (rule opted_out); the form says so before anyone types (docs/opt-out.md).
        <p class="notice warning" id="opted-out">
          <strong>{optedOut.number} has opted out.</strong> They texted {optedOut.keyword} to this line on <Time at={optedOut.since} />, so no SMS can be sent
          to them from it, by you or an agent, until they text START.
        </p>
      ) : null}
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
            disabled={optedOut ? true : undefined}
            aria-invalid={errors.body ? 'true' : undefined}
            aria-describedby={optedOut ? 'opted-out' : described('body', 'body-hint')}
            value={props.replyBody}
          />
          <p class="hint" id="body-hint">
            Sent from {lineName(person.lines, thread.lineId)}
            {thread.channel === 'EMAIL' ? `, as a reply in this conversation${thread.subject ? ` (Re: ${thread.subject})` : ''}` : ''}.
          </p>
          <FieldError id="body-error" error={errors.body} />
        </div>
        <div class="actions">
          <button type="submit" data-busy-text="Sending…" disabled={optedOut ? true : undefined} aria-describedby={optedOut ? 'opted-out' : undefined}>
            Send reply
          </button>
        </div>
      </form>
    </section>
  );
}

/** The thread's labels, each with a remove button, and the form that adds one. */
export function LabelsBox(props: {
  person: Person;
  base: string;
  detail: ThreadDetail;
  errors: ThreadErrors;
  described: (field: ThreadField, hint?: string) => string | undefined;
}) {
  const { person, base, detail, errors, described } = props;
  return (
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
  );
}

import { Person } from '../../identity/principal';
import { EndpointView } from '../../webhooks/webhook-endpoints.repository';
import { EVENT_KINDS, MAX_MESSAGE_HISTORY_COUNT } from '../../webhooks/webhook.types';
import { CsrfField } from '../components/csrf-field';
import { FieldError } from '../components/form-parts';
import { Notice } from '../components/notice';
import { Layout } from '../components/layout';
import { Breadcrumb } from './endpoint-parts';

const CURRENT = '/settings/webhooks';

/** What the add and edit forms hold, as typed (re-filled after a refusal). */
export interface EndpointForm {
  url: string;
  events: string[];
  mode: string;
  messageHistoryCount: string;
  allChannels: boolean;
  lineIds: string[];
  signatureVersion: string;
  legacySignature: boolean;
}

/** The form fields an error can be shown next to; `form` is the form as a whole. */
export type FormField =
  'url' | 'events' | 'mode' | 'messageHistoryCount' | 'channelScope' | 'signatureVersion' | 'legacySignature' | 'since' | 'until' | 'form';

export type FieldErrors = Partial<Record<FormField, string>>;

export const EMPTY_FORM: EndpointForm = {
  url: '',
  events: [],
  mode: 'concise',
  messageHistoryCount: '10',
  allChannels: true,
  lineIds: [],
  signatureVersion: 'v1',
  legacySignature: true,
};

export function formOf(endpoint: EndpointView): EndpointForm {
  return {
    url: endpoint.url,
    events: endpoint.events,
    mode: endpoint.mode,
    messageHistoryCount: String(endpoint.messageHistoryCount),
    allChannels: endpoint.channelScope.allChannels,
    lineIds: endpoint.channelScope.channels.map((c) => c.channelId),
    signatureVersion: endpoint.signatureVersion,
    legacySignature: endpoint.legacySignature,
  };
}

/** The fields of the add and edit forms; each error sits next to its field. */
function EndpointFields(props: { person: Person; form: EndpointForm; errors: FieldErrors; urlRule: string }) {
  const { form, errors, person } = props;
  const described = (field: FormField, hint?: string) => [errors[field] ? `${field}-error` : '', hint ?? ''].filter(Boolean).join(' ') || undefined;
  return (
    <>
      <div class="field">
        <label for="url">URL</label>
        <input
          id="url"
          name="url"
          type="url"
          required
          maxLength={2048}
          value={form.url}
          aria-invalid={errors.url ? 'true' : undefined}
          aria-describedby={described('url', 'url-hint')}
        />
        <p class="hint" id="url-hint">
          {props.urlRule}
        </p>
        <FieldError id="url-error" error={errors.url} />
      </div>
      <fieldset aria-describedby={described('events')}>
        <legend>Event kinds</legend>
        <ul class="checks">
          {EVENT_KINDS.map((kind) => (
            <li key={kind}>
              <input type="checkbox" id={`event-${kind}`} name={`events.${kind}`} value="on" checked={form.events.includes(kind)} />
              <label for={`event-${kind}`}>{kind}</label>
            </li>
          ))}
        </ul>
        <FieldError id="events-error" error={errors.events} />
      </fieldset>
      <fieldset aria-describedby={described('mode')}>
        <legend>Mode</legend>
        <ul class="checks">
          <li>
            <input type="radio" id="mode-concise" name="mode" value="concise" checked={form.mode !== 'verbose'} />
            <label for="mode-concise">Concise</label>
          </li>
          <li>
            <input type="radio" id="mode-verbose" name="mode" value="verbose" checked={form.mode === 'verbose'} />
            <label for="mode-verbose">Verbose</label>
          </li>
        </ul>
        <FieldError id="mode-error" error={errors.mode} />
      </fieldset>
      <div class="field">
        <label for="messageHistoryCount">Message history</label>
        <input
          id="messageHistoryCount"
          name="messageHistoryCount"
          type="number"
          min={0}
          max={MAX_MESSAGE_HISTORY_COUNT}
          step={1}
          value={form.messageHistoryCount}
          aria-invalid={errors.messageHistoryCount ? 'true' : undefined}
          aria-describedby={described('messageHistoryCount', 'history-hint')}
        />
        <p class="hint" id="history-hint">
          Verbose mode: the most recent messages of the thread sent with each event (0 to {MAX_MESSAGE_HISTORY_COUNT}).
        </p>
        <FieldError id="messageHistoryCount-error" error={errors.messageHistoryCount} />
      </div>
      <fieldset aria-describedby={described('channelScope')}>
        <legend>Channel scope</legend>
        <ul class="checks">
          <li>
            <input type="radio" id="scope-all" name="scope" value="all" checked={form.allChannels} />
            <label for="scope-all">All lines</label>
          </li>
          <li>
            <input type="radio" id="scope-lines" name="scope" value="lines" checked={!form.allChannels} />
            <label for="scope-lines">Only these lines:</label>
            {person.lines.length === 0 ? (
              <p class="hint">You have no lines yet.</p>
            ) : (
              <ul class="checks nested">
                {person.lines.map((line) => (
                  <li key={line.id}>
                    <input type="checkbox" id={`line-${line.id}`} name={`lines.${line.id}`} value="on" checked={form.lineIds.includes(line.id)} />
                    <label for={`line-${line.id}`}>{line.address}</label>
                  </li>
                ))}
              </ul>
            )}
          </li>
        </ul>
        <FieldError id="channelScope-error" error={errors.channelScope} />
      </fieldset>
      <fieldset aria-describedby={described('signatureVersion', 'signature-hint')}>
        <legend>Signature</legend>
        <ul class="checks">
          <li>
            <input type="radio" id="signature-v1" name="signatureVersion" value="v1" checked={form.signatureVersion !== 'v1a'} />
            <label for="signature-v1">v1: HMAC-SHA256 with the signing secret</label>
          </li>
          <li>
            <input type="radio" id="signature-v1a" name="signatureVersion" value="v1a" checked={form.signatureVersion === 'v1a'} />
            <label for="signature-v1a">v1a: ed25519, verified with a public key</label>
          </li>
        </ul>
        <p class="hint" id="signature-hint">
          The Standard Webhooks webhook-signature header. v1a needs no shared secret on your side: the public key is shown on the endpoint.
        </p>
        <FieldError id="signatureVersion-error" error={errors.signatureVersion} />
      </fieldset>
      <div class="field">
        <ul class="checks">
          <li>
            <input
              type="checkbox"
              id="legacySignature"
              name="legacySignature"
              value="on"
              checked={form.legacySignature}
              aria-describedby={described('legacySignature', 'legacy-hint')}
            />
            <label for="legacySignature">Also send the legacy X-Service-Signature header</label>
          </li>
        </ul>
        <p class="hint" id="legacy-hint">
          Untick once your receiver verifies the Standard Webhooks headers.
        </p>
        <FieldError id="legacySignature-error" error={errors.legacySignature} />
      </div>
    </>
  );
}

/** Add endpoint. */
export function NewEndpointPage(props: { person: Person; form: EndpointForm; errors: FieldErrors; urlRule: string }) {
  return (
    <Layout title="Add endpoint" person={props.person} current={CURRENT}>
      <Breadcrumb trail={[]} />
      <Notice error={props.errors.form} />
      <form method="post" action={CURRENT} class="stack wide">
        <CsrfField person={props.person} />
        <EndpointFields person={props.person} form={props.form} errors={props.errors} urlRule={props.urlRule} />
        <div>
          <button type="submit">Add endpoint</button>
        </div>
      </form>
    </Layout>
  );
}

/** Edit an endpoint: the same fields, Save. */
export function EditEndpointPage(props: { person: Person; endpoint: EndpointView; form: EndpointForm; errors: FieldErrors; urlRule: string }) {
  const base = `${CURRENT}/${props.endpoint.id}`;
  return (
    <Layout title="Edit endpoint" person={props.person} current={CURRENT}>
      <Breadcrumb trail={[[base, props.endpoint.url]]} />
      <Notice error={props.errors.form} />
      <form method="post" action={`${base}/edit`} class="stack wide">
        <CsrfField person={props.person} />
        <EndpointFields person={props.person} form={props.form} errors={props.errors} urlRule={props.urlRule} />
        <div class="actions">
          <button type="submit">Save</button>
          <a href={base}>Cancel</a>
        </div>
      </form>
    </Layout>
  );
}

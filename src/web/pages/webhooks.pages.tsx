import type { ComponentChildren } from 'preact';
import { Person } from '../../identity/principal';
import { DeliveryDetail, DeliveryView, RecoverResult } from '../../delivery/deliveries.service';
import { DELIVERY_STATUSES } from '../../delivery/webhook-delivery.entity';
import { EndpointView, FailingRunView } from '../../webhooks/webhook-endpoints.repository';
import { EVENT_KINDS, MAX_MESSAGE_HISTORY_COUNT } from '../../webhooks/webhook.types';
import { JWKS_MAX_AGE_SECONDS, jwksPath } from '../../webhooks/webhook-keys';
import { AUTO_DISABLE_CONSECUTIVE_FAILURES, MANUAL_DISABLE_REASON } from '../../webhooks/webhooks.service';
import { Time } from '../components/time';
import { CsrfField } from './csrf-field';
import { ConfirmForm, FieldError, NoticeBox } from './form-parts';
import { Layout } from './layout';

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

/** Notices after a 303, by the key in `?done=` (never free text from the URL). */
export const NOTICES = {
  saved: 'The endpoint was saved.',
  disabled: 'The endpoint is disabled: nothing is delivered to it until you enable it.',
  enabled: 'The endpoint is enabled again.',
  deleted: 'The endpoint was deleted.',
  resent: 'The delivery was sent again as this new delivery.',
} as const;
export type Notice = keyof typeof NOTICES;

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

function Breadcrumb(props: { trail: Array<[string, string]> }) {
  return (
    <nav aria-label="Breadcrumb" class="breadcrumb">
      <ol>
        <li>
          <a href={CURRENT}>Webhooks</a>
        </li>
        {props.trail.map(([href, label]) => (
          <li key={href}>
            <a href={href}>{label}</a>
          </li>
        ))}
      </ol>
    </nav>
  );
}

function scopeText(endpoint: EndpointView, person: Person): string {
  if (endpoint.channelScope.allChannels) return 'All lines';
  return endpoint.channelScope.channels.map((c) => person.lines.find((l) => l.id === c.channelId)?.address ?? c.channelId).join(', ');
}

function statusText(endpoint: EndpointView): string {
  if (endpoint.status === 'active') return 'Active';
  if (!endpoint.disabledReason || endpoint.disabledReason === MANUAL_DISABLE_REASON) return 'Disabled';
  return `Disabled: ${endpoint.disabledReason}`;
}

function Status(props: { endpoint: EndpointView }) {
  return <span class={`status status-${props.endpoint.status}`}>{statusText(props.endpoint)}</span>;
}

/** Settings → Webhooks: the person's endpoints. */
export function WebhooksPage(props: { person: Person; endpoints: Array<{ endpoint: EndpointView; last: DeliveryView | null }>; notice?: string }) {
  return (
    <Layout title="Webhooks" person={props.person} current={CURRENT}>
      <NoticeBox notice={props.notice} />
      <p>Webhook endpoints receive signed POSTs when events happen on your lines. Agents can manage the same endpoints with the MCP tools.</p>
      <p>
        <a class="button" href="/settings/webhooks/new">
          Add endpoint
        </a>
      </p>
      {props.endpoints.length === 0 ? (
        <p>You have no webhook endpoints yet.</p>
      ) : (
        <table class="data">
          <caption>Your webhook endpoints</caption>
          <thead>
            <tr>
              <th scope="col">URL</th>
              <th scope="col">Event kinds</th>
              <th scope="col">Mode</th>
              <th scope="col">Status</th>
              <th scope="col">Channel scope</th>
              <th scope="col">Last delivery</th>
            </tr>
          </thead>
          <tbody>
            {props.endpoints.map(({ endpoint, last }) => (
              <tr key={endpoint.id}>
                <td class="url">
                  <a href={`${CURRENT}/${endpoint.id}`}>{endpoint.url}</a>
                </td>
                <td data-label="Event kinds">{endpoint.events.join(', ')}</td>
                <td data-label="Mode">{endpoint.mode}</td>
                <td data-label="Status">
                  <Status endpoint={endpoint} />
                </td>
                <td data-label="Channel scope">{scopeText(endpoint, props.person)}</td>
                <td data-label="Last delivery">
                  {last ? (
                    <>
                      {last.status}, <Time at={last.lastAttemptAt ?? last.createdAt} />
                    </>
                  ) : (
                    'none yet'
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Layout>
  );
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
      <NoticeBox error={props.errors.form} />
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
      <NoticeBox error={props.errors.form} />
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

/** The signing secret, shown once: after Add endpoint, and after Rotate secret. */
export function SecretPage(props: { person: Person; endpoint: EndpointView; secret: string; signingSecret: string; previousExpiresAt?: string }) {
  const base = `${CURRENT}/${props.endpoint.id}`;
  return (
    <Layout title={props.previousExpiresAt ? 'New signing secret' : 'Endpoint added'} person={props.person} current={CURRENT}>
      <Breadcrumb trail={[[base, props.endpoint.url]]} />
      <p class="notice success" role="status">
        {props.previousExpiresAt ? 'The endpoint has a new signing secret.' : `Events are sent to ${props.endpoint.url} from now on, signed with this secret.`}
      </p>
      <CopyField id="secret" label="Signing secret" value={props.secret}>
        This is the only time the secret is shown. Store it in your secret store now; if you lose it, rotate the secret.
      </CopyField>
      <CopyField id="signingSecret" label="The same secret for Standard Webhooks libraries" value={props.signingSecret}>
        whsec_ followed by the base64 of the secret above: one key, two spellings.
      </CopyField>
      {props.endpoint.publicKey ? <PublicKeyField endpoint={props.endpoint} /> : null}
      {props.previousExpiresAt ? (
        <p>
          The previous secret keeps signing deliveries, beside the new one, until <Time at={props.previousExpiresAt} />.
        </p>
      ) : null}
      <p>
        <a href={base}>Open the endpoint</a>
      </p>
    </Layout>
  );
}

/** A read-only value with a Copy button (`/static/app.js`) and a hint under it. */
function CopyField(props: { id: string; label: string; value: string; children: ComponentChildren }) {
  return (
    <div class="field secret">
      <label for={props.id}>{props.label}</label>
      <div class="copy-row">
        <input id={props.id} type="text" readOnly value={props.value} aria-describedby={`${props.id}-hint`} autocomplete="off" spellcheck={false} />
        <button type="button" data-copy={props.id}>
          Copy
        </button>
        <span class="copy-status" role="status" data-copy-status={props.id}></span>
      </div>
      <p class="hint" id={`${props.id}-hint`}>
        {props.children}
      </p>
    </div>
  );
}

/** A v1a endpoint's public key with a Copy button and its JWK Set URL. */
function PublicKeyField(props: { endpoint: EndpointView }) {
  const jwks = jwksPath(props.endpoint.id);
  return (
    <CopyField id="publicKey" label="Public key (v1a)" value={props.endpoint.publicKey ?? ''}>
      Not a secret. Also published as a JWK Set at <a href={jwks}>{jwks}</a> (cached up to {JWKS_MAX_AGE_SECONDS / 60} minutes).
    </CopyField>
  );
}

/** Filter and page of the delivery log, as asked in the query. */
export interface LogQuery {
  status?: string;
  cursor?: string;
}

/** One endpoint: details, actions, recovery, and its delivery log. */
export function EndpointPage(props: {
  person: Person;
  endpoint: EndpointView;
  /** Its current failing run, shown beside its status (null or absent: not failing). */
  failing?: FailingRunView | null;
  deliveries: DeliveryView[];
  nextCursor: string | null;
  query: LogQuery;
  notice?: string;
  recovered?: Pick<RecoverResult, 'queued' | 'nextSince'>;
  recoverForm?: { since: string; until: string };
  errors?: FieldErrors;
}) {
  const { endpoint, person } = props;
  const base = `${CURRENT}/${endpoint.id}`;
  const errors = props.errors ?? {};
  const olderHref = props.nextCursor
    ? `${base}?${new URLSearchParams({ ...(props.query.status ? { status: props.query.status } : {}), cursor: props.nextCursor }).toString()}#log`
    : null;
  return (
    <Layout title="Webhook endpoint" person={person} current={CURRENT}>
      <Breadcrumb trail={[[base, endpoint.url]]} />
      <NoticeBox notice={props.notice} error={errors.form} />
      <dl class="details">
        <dt>URL</dt>
        <dd class="url">{endpoint.url}</dd>
        <dt>Status</dt>
        <dd>
          <Status endpoint={endpoint} />
          {endpoint.status === 'active' && props.failing ? (
            <p class="notice error" role="status">
              Failing since <Time at={props.failing.since} />: {props.failing.failures} failed attempt{props.failing.failures === 1 ? '' : 's'} in a row. It is
              disabled after {AUTO_DISABLE_CONSECUTIVE_FAILURES} in a row or 24 hours of failures; a 2xx ends the run.
            </p>
          ) : null}
        </dd>
        <dt>Event kinds</dt>
        <dd>{endpoint.events.join(', ')}</dd>
        <dt>Mode</dt>
        <dd>{endpoint.mode === 'verbose' ? `verbose, message history ${endpoint.messageHistoryCount}` : 'concise'}</dd>
        <dt>Channel scope</dt>
        <dd>{scopeText(endpoint, person)}</dd>
        <dt>Signature</dt>
        <dd>
          {endpoint.signatureVersion === 'v1a' ? 'v1a (ed25519)' : 'v1 (HMAC-SHA256)'}
          {endpoint.legacySignature ? ', and the legacy X-Service-Signature' : ', legacy X-Service-Signature off'}
        </dd>
        <dt>Added</dt>
        <dd>
          <Time at={endpoint.createdAt} />
        </dd>
      </dl>
      {endpoint.publicKey ? <PublicKeyField endpoint={endpoint} /> : null}
      <div class="actions">
        <a class="button" href={`${base}/edit`}>
          Edit
        </a>
        <form method="post" action={`${base}/rotate-secret`}>
          <CsrfField person={person} />
          <button type="submit">Rotate secret</button>
        </form>
        <form method="post" action={`${base}/${endpoint.status === 'active' ? 'disable' : 'enable'}`}>
          <CsrfField person={person} />
          <button type="submit">{endpoint.status === 'active' ? 'Disable' : 'Enable'}</button>
        </form>
        <a class="button danger" href={`${base}/delete`}>
          Delete
        </a>
      </div>

      <section aria-labelledby="recover-heading">
        <h2 id="recover-heading">Recover failed deliveries</h2>
        <p>Sends every delivery that failed in a window again, once, as new deliveries. Times are UTC; the window is at most 7 days.</p>
        {props.recovered ? (
          <p class="notice success" role="status">
            {props.recovered.queued} {props.recovered.queued === 1 ? 'delivery' : 'deliveries'} queued.
            {props.recovered.nextSince ? (
              <>
                {' '}
                More failed deliveries are left: recover again since <Time at={props.recovered.nextSince} />.
              </>
            ) : null}
          </p>
        ) : null}
        <form method="post" action={`${base}/recover`} class="inline-form">
          <CsrfField person={person} />
          <div class="field">
            <label for="since">Since</label>
            <input
              id="since"
              name="since"
              type="datetime-local"
              step={1}
              required
              value={props.recoverForm?.since ?? ''}
              aria-invalid={errors.since ? 'true' : undefined}
              aria-describedby={errors.since ? 'since-error' : undefined}
            />
            <FieldError id="since-error" error={errors.since} />
          </div>
          <div class="field">
            <label for="until">Until (optional)</label>
            <input
              id="until"
              name="until"
              type="datetime-local"
              step={1}
              value={props.recoverForm?.until ?? ''}
              aria-invalid={errors.until ? 'true' : undefined}
              aria-describedby={errors.until ? 'until-error' : undefined}
            />
            <FieldError id="until-error" error={errors.until} />
          </div>
          <button type="submit">Recover</button>
        </form>
      </section>

      <section aria-labelledby="log-heading" id="log">
        <h2 id="log-heading">Delivery log</h2>
        <form method="get" action={`${base}#log`} class="inline-form">
          <div class="field">
            <label for="status">Status</label>
            <select id="status" name="status">
              <option value="" selected={!props.query.status}>
                Any status
              </option>
              {DELIVERY_STATUSES.map((status) => (
                <option key={status} value={status} selected={props.query.status === status}>
                  {status}
                </option>
              ))}
            </select>
          </div>
          <button type="submit">Filter</button>
        </form>
        {props.deliveries.length === 0 ? (
          <p>No deliveries{props.query.status ? ` with status ${props.query.status}` : ''} yet.</p>
        ) : (
          <div class="table-scroll">
            <table class="data">
              <caption>Deliveries, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Event kind</th>
                  <th scope="col">Event id</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last HTTP status</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Next retry</th>
                </tr>
              </thead>
              <tbody>
                {props.deliveries.map((d) => (
                  <tr key={d.id}>
                    <td data-label="Event kind">{d.eventType}</td>
                    <td data-label="Event id" class="mono event-id">
                      <a href={`${base}/deliveries/${d.id}`}>{d.eventId}</a>
                    </td>
                    <td data-label="Status">
                      <span class={`status status-${d.status}`}>{d.status}</span>
                    </td>
                    <td data-label="Attempts">{d.attempts}</td>
                    <td data-label="Last HTTP status" class="last-status">
                      {d.lastStatusCode ?? d.lastError ?? '—'}
                    </td>
                    <td data-label="Duration">{d.lastDurationMs === null ? '—' : `${d.lastDurationMs} ms`}</td>
                    <td data-label="Next retry">
                      <Time at={d.nextAttemptAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {olderHref || props.query.cursor ? (
          <p class="actions">
            {props.query.cursor ? <a href={`${base}${props.query.status ? `?status=${encodeURIComponent(props.query.status)}` : ''}#log`}>Newest</a> : null}
            {olderHref ? <a href={olderHref}>Older</a> : null}
          </p>
        ) : null}
      </section>
    </Layout>
  );
}

/** One delivery: its payload and every attempt, and Resend. */
export function DeliveryPage(props: { person: Person; endpoint: EndpointView; detail: DeliveryDetail; notice?: string }) {
  const { delivery, envelope, attempts } = props.detail;
  const base = `${CURRENT}/${props.endpoint.id}`;
  return (
    <Layout title="Delivery" person={props.person} current={CURRENT}>
      <Breadcrumb trail={[[base, props.endpoint.url]]} />
      <NoticeBox notice={props.notice} />
      <dl class="details">
        <dt>Event kind</dt>
        <dd>{delivery.eventType}</dd>
        <dt>Event id</dt>
        <dd class="mono nowrap">{delivery.eventId}</dd>
        <dt>Status</dt>
        <dd>
          <span class={`status status-${delivery.status}`}>{delivery.status}</span>
        </dd>
        <dt>Attempts</dt>
        <dd>{delivery.attempts}</dd>
        <dt>Created</dt>
        <dd>
          <Time at={delivery.createdAt} />
        </dd>
        <dt>Next retry</dt>
        <dd>
          <Time at={delivery.nextAttemptAt} />
        </dd>
        {delivery.resentFromId ? (
          <>
            <dt>Resent from</dt>
            <dd>
              <a href={`${base}/deliveries/${delivery.resentFromId}`}>the original delivery</a>
            </dd>
          </>
        ) : null}
        {delivery.recoveredAt ? (
          <>
            <dt>Recovered</dt>
            <dd>
              <Time at={delivery.recoveredAt} />
            </dd>
          </>
        ) : null}
      </dl>
      <form method="post" action={`${base}/deliveries/${delivery.id}/resend`}>
        <CsrfField person={props.person} />
        <button type="submit">Resend</button>
      </form>
      <section aria-labelledby="attempts-heading">
        <h2 id="attempts-heading">Attempts</h2>
        {attempts.length === 0 ? (
          <p>No attempt yet.</p>
        ) : (
          <table class="data">
            <caption>Every attempt, oldest first</caption>
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Time</th>
                <th scope="col">Status or error</th>
                <th scope="col">Duration</th>
                <th scope="col">Response body (first 2 KB)</th>
              </tr>
            </thead>
            <tbody>
              {attempts.map((a) => (
                <tr key={a.attemptNumber}>
                  <td data-label="#">{a.attemptNumber}</td>
                  <td data-label="Time">
                    <Time at={a.attemptedAt} />
                  </td>
                  <td data-label="Status or error">{a.statusCode ?? a.errorKind ?? '—'}</td>
                  <td data-label="Duration">{a.durationMs} ms</td>
                  <td data-label="Response body">{a.responseBody ? <pre class="body">{a.responseBody}</pre> : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section aria-labelledby="payload-heading">
        <h2 id="payload-heading">Payload</h2>
        <pre class="payload" tabIndex={0} aria-labelledby="payload-heading">
          {JSON.stringify(envelope, null, 2)}
        </pre>
      </section>
    </Layout>
  );
}

/** Delete: a confirmation page. */
export function DeleteEndpointPage(props: { person: Person; endpoint: EndpointView }) {
  const base = `${CURRENT}/${props.endpoint.id}`;
  return (
    <Layout title="Delete endpoint" person={props.person} current={CURRENT}>
      <Breadcrumb trail={[[base, props.endpoint.url]]} />
      <p>
        Delete the endpoint <strong class="url">{props.endpoint.url}</strong>? Its delivery log and any waiting retries are deleted with it. This cannot be
        undone.
      </p>
      <ConfirmForm person={props.person} action={`${base}/delete`} cancel={base}>
        Delete endpoint
      </ConfirmForm>
    </Layout>
  );
}

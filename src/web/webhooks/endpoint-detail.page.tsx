import { Person } from '../../identity/principal';
import { DeliveryView, RecoverResult } from '../../delivery/deliveries.service';
import { DELIVERY_STATUSES } from '../../delivery/webhook-delivery.entity';
import { EndpointView, FailingRunView } from '../../webhooks/webhook-endpoints.repository';
import { AUTO_DISABLE_CONSECUTIVE_FAILURES } from '../../webhooks/webhooks.service';
import { CsrfField } from '../components/csrf-field';
import { FieldError } from '../components/form-parts';
import { Notice } from '../components/notice';
import { Layout } from '../components/layout';
import { Time } from '../components/time';
import { FieldErrors } from './endpoint-form.page';
import { Breadcrumb, PublicKeyField, Status, scopeText } from './endpoint-parts';

const CURRENT = '/settings/webhooks';

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
      <Notice notice={props.notice} error={errors.form} />
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
        <Notice
          notice={
            props.recovered ? (
              <>
                {props.recovered.queued} {props.recovered.queued === 1 ? 'delivery' : 'deliveries'} queued.
                {props.recovered.nextSince ? (
                  <>
                    {' '}
                    More failed deliveries are left: recover again since <Time at={props.recovered.nextSince} />.
                  </>
                ) : null}
              </>
            ) : undefined
          }
        />
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

import { Person } from '../../identity/principal';
import { DeliveryDetail } from '../../delivery/deliveries.service';
import { EndpointView } from '../../webhooks/webhook-endpoints.repository';
import { CsrfField } from '../components/csrf-field';
import { Notice } from '../components/notice';
import { Layout } from '../components/layout';
import { Time } from '../components/time';
import { Breadcrumb } from './endpoint-parts';

const CURRENT = '/settings/webhooks';

/** One delivery: its payload and every attempt, and Resend. */
export function DeliveryPage(props: { person: Person; endpoint: EndpointView; detail: DeliveryDetail; notice?: string }) {
  const { delivery, envelope, attempts } = props.detail;
  const base = `${CURRENT}/${props.endpoint.id}`;
  return (
    <Layout title="Delivery" person={props.person} current={CURRENT}>
      <Breadcrumb trail={[[base, props.endpoint.url]]} />
      <Notice notice={props.notice} />
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

import { Person } from '../../identity/principal';
import { DeliveryView } from '../../delivery/deliveries.service';
import { EndpointView } from '../../webhooks/webhook-endpoints.repository';
import { Notice } from '../components/notice';
import { Layout } from '../components/layout';
import { Time } from '../components/time';
import { Status, scopeText } from './endpoint-parts';

const CURRENT = '/settings/webhooks';

/** Settings → Webhooks: the person's endpoints. */
export function WebhooksPage(props: { person: Person; endpoints: Array<{ endpoint: EndpointView; last: DeliveryView | null }>; notice?: string }) {
  return (
    <Layout title="Webhooks" person={props.person} current={CURRENT}>
      <Notice notice={props.notice} />
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

import { Person } from '../../identity/principal';
import { EndpointView } from '../../webhooks/webhook-endpoints.repository';
import { ConfirmForm } from '../components/form-parts';
import { Layout } from '../components/layout';
import { Breadcrumb } from './endpoint-parts';

const CURRENT = '/settings/webhooks';

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

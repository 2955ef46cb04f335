import { Person } from '../../identity/principal';
import { EndpointView } from '../../webhooks/webhook-endpoints.repository';
import { Layout } from '../components/layout';
import { Time } from '../components/time';
import { Breadcrumb, CopyField, PublicKeyField } from './endpoint-parts';
import { Notice } from '../components/notice';

const CURRENT = '/settings/webhooks';

/** The signing secret, shown once: after Add endpoint, and after Rotate secret. */
export function SecretPage(props: { person: Person; endpoint: EndpointView; secret: string; signingSecret: string; previousExpiresAt?: string }) {
  const base = `${CURRENT}/${props.endpoint.id}`;
  return (
    <Layout title={props.previousExpiresAt ? 'New signing secret' : 'Endpoint added'} person={props.person} current={CURRENT}>
      <Breadcrumb trail={[[base, props.endpoint.url]]} />
      <Notice
        notice={
          props.previousExpiresAt ? 'The endpoint has a new signing secret.' : `Events are sent to ${props.endpoint.url} from now on, signed with this secret.`
        }
      />
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

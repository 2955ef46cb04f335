import { Person } from '../../identity/principal';
import { PersonApiKeyView } from '../../auth/person-api-keys.service';
import { ConfirmForm } from '../components/form-parts';
import { Layout } from '../components/layout';

const BASE = '/settings/api-keys';

/** Are you sure? Revoking refuses the key's next request. */
export function RevokeApiKeyPage(props: { person: Person; apiKey: PersonApiKeyView }) {
  const { apiKey } = props;
  return (
    <Layout title={`Revoke “${apiKey.name}”?`} person={props.person} current={BASE}>
      <p>
        The key <code>{apiKey.keyHint}</code>
        {apiKey.mine ? null : <> of {apiKey.owner.email}</>} will stop working at once: every program that uses it gets “401 Unauthorized”. This cannot be
        undone.
      </p>
      <ConfirmForm person={props.person} action={`${BASE}/${apiKey.id}/revoke`} cancel={BASE}>
        Revoke key
      </ConfirmForm>
    </Layout>
  );
}

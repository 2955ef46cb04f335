import { Person } from '../../identity/principal';
import { GrantView } from '../../oauth/oauth.service';
import { ConfirmForm } from '../components/form-parts';
import { Layout } from '../components/layout';
import { clientName } from './connected-app-parts';

const BASE = '/settings/connected-apps';

/** Are you sure? Revoking refuses the app's next request and its refresh. */
export function RevokeConnectedAppPage(props: { person: Person; grant: GrantView }) {
  const { grant } = props;
  return (
    <Layout title={`Disconnect “${clientName(grant)}”?`} person={props.person} current={BASE}>
      <p>
        The app returning to <strong>{grant.client.redirectHost}</strong> loses its access at once: its next request gets “401 Unauthorized”, and it cannot
        renew its access. To use it again, connect it again. This cannot be undone.
      </p>
      <ConfirmForm person={props.person} action={`${BASE}/${grant.id}/revoke`} cancel={BASE}>
        Revoke access
      </ConfirmForm>
    </Layout>
  );
}

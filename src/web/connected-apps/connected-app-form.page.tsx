import { KEY_PERMISSIONS } from '../../identity/key-permissions';
import { Person } from '../../identity/principal';
import { GrantView } from '../../oauth/oauth.service';
import { AccessEditForm, AccessFormErrors, ChannelAccessChoice, PermissionsText } from '../components/access-form';
import { Layout } from '../components/layout';
import { REGISTRATION_TEXT, clientName } from './connected-app-parts';

const BASE = '/settings/connected-apps';

/**
 * Change access: the channel access and permissions of one of the person's apps, in the form of
 * an API key's (AccessEditForm). A permission the app did not ask for when it was connected is
 * shown but cannot be ticked (OAuthService.updateGrantAccess: a grant never exceeds its scope).
 */
export function EditConnectedAppPage(props: {
  person: Person;
  grant: GrantView;
  choice: ChannelAccessChoice;
  permissions: readonly string[];
  errors?: AccessFormErrors;
}) {
  const { grant } = props;
  const unasked = KEY_PERMISSIONS.some((permission) => !grant.requestedScopes.includes(permission));
  return (
    <Layout title={`Access of “${clientName(grant)}”`} person={props.person} current={BASE}>
      <p class="muted">
        The app returning to <strong>{grant.client.redirectHost}</strong> ({REGISTRATION_TEXT[grant.client.registration].toLowerCase()}). A change applies to
        its next request, without connecting it again; an app that listens for changes is told at once.
      </p>
      <p class="muted">
        It asked for <PermissionsText permissions={grant.requestedScopes} /> when you connected it, and can be given no more than that
        {unasked ? ': to give it a permission it did not ask for, connect it again from the app, asking for it.' : '.'}
      </p>
      <AccessEditForm
        person={props.person}
        action={`${BASE}/${grant.id}/edit`}
        cancel={BASE}
        choice={props.choice}
        permissions={props.permissions}
        errors={props.errors}
        holder="app"
        offered={grant.requestedScopes}
      />
    </Layout>
  );
}

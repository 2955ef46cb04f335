import { KEY_PERMISSIONS } from '../../identity/key-permissions';
import { Person } from '../../identity/principal';
import { GrantView } from '../../oauth/oauth.service';
import { AccessEditForm, AccessFormErrors, ChannelAccessChoice, ChannelAccessText, PermissionsText } from './access-form';
import { MadeAndUsedCells } from '../components/time';
import { ConfirmForm } from './form-parts';
import { Layout } from './layout';

const BASE = '/settings/connected-apps';

/** The notices the list shows after a change (the `notice` query parameter; nothing from it is echoed). */
export const NOTICES = {
  saved: "The app's channel access and permissions were saved. Its next request uses them.",
  revoked: 'The app was disconnected. Its next request is refused, and it cannot renew its access.',
} as const;
export type NoticeKind = keyof typeof NOTICES;

/** How the app's identity was established, shown under its name (a column of its own would push Revoke out of a desktop's view). */
const REGISTRATION_TEXT: Record<GrantView['client']['registration'], string> = {
  'self-registered': 'Self-registered',
  'metadata-document': 'Metadata document',
};

/** The name the client gave itself, or its client id when it gave none. */
function clientName(grant: GrantView): string {
  return grant.client.name ?? grant.client.id;
}

/** What a connected app is, and how to connect one: the page's introduction, and all of it when there are none. */
function Introduction(props: { mcpUrl: string; empty: boolean }) {
  return (
    <div class="stack">
      <p class="muted">
        Connected apps are AI assistants such as Claude or ChatGPT that you allowed to use your channels through the MCP endpoint, by signing in and choosing
        what they may reach. Each acts as you, with the channel access and permissions you chose: change them here at any time, or disconnect the app.
      </p>
      {props.empty ? (
        <>
          <p>You have not connected any app yet.</p>
          <p>
            To connect one, add a connector (a custom MCP server) in the app and paste this URL: <code>{props.mcpUrl}</code>. The app sends you here to sign in
            and to choose its access. The guide “Connecting Claude, ChatGPT and other OAuth clients” in the service's MCP documentation (docs/mcp.md) goes
            through it step by step. Programs that take a key in a header use an <a href="/settings/api-keys">API key</a> instead.
          </p>
        </>
      ) : null}
    </div>
  );
}

/** Settings → Connected apps: the person's OAuth grants, newest first, each with Change access and Revoke. */
export function ConnectedAppsListPage(props: { person: Person; grants: GrantView[]; mcpUrl: string; notice?: NoticeKind }) {
  const { grants } = props;
  return (
    <Layout title="Connected apps" person={props.person} current={BASE}>
      {props.notice ? (
        <p class="notice success" role="status">
          {NOTICES[props.notice]}
        </p>
      ) : null}
      <Introduction mcpUrl={props.mcpUrl} empty={grants.length === 0} />
      {grants.length === 0 ? null : (
        <div class="grants">
          <div class="table-scroll">
            <table class="data">
              <caption class="visually-hidden">Apps you connected, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">App</th>
                  <th scope="col">Returns to</th>
                  <th scope="col">Channel access</th>
                  <th scope="col">Permissions</th>
                  <th scope="col">Connected</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {grants.map((grant) => (
                  <tr key={grant.id}>
                    <th scope="row">
                      {clientName(grant)}
                      <br />
                      <span class="muted">{REGISTRATION_TEXT[grant.client.registration]}</span>
                    </th>
                    <td>{grant.client.redirectHost}</td>
                    <td data-label="Channel access">
                      <ChannelAccessText access={grant.channelAccess} />
                    </td>
                    <td>
                      <PermissionsText permissions={grant.permissions} />
                    </td>
                    <MadeAndUsedCells madeLabel="Connected" made={grant.createdAt} lastUsed={grant.lastUsedAt} />
                    <td>
                      <ul class="plain row-links">
                        <li>
                          <a href={`${BASE}/${grant.id}/edit`}>
                            Change access<span class="visually-hidden"> of {clientName(grant)}</span>
                          </a>
                        </li>
                        <li>
                          <a class="danger-link" href={`${BASE}/${grant.id}/revoke`}>
                            Revoke<span class="visually-hidden"> {clientName(grant)}</span>
                          </a>
                        </li>
                      </ul>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </div>
      )}
    </Layout>
  );
}

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

/** A grant that is not there, or not the person's: one 404 page for both. */
export function ConnectedAppNotFoundPage(props: { person: Person }) {
  return (
    <Layout title="Connected app not found" person={props.person} current={BASE}>
      <p>There is no such app among the apps you connected. It may have been disconnected already.</p>
      <p>
        <a href={BASE}>Back to Connected apps</a>
      </p>
    </Layout>
  );
}

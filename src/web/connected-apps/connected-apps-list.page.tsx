import { Person } from '../../identity/principal';
import { GrantView } from '../../oauth/oauth.service';
import { ChannelAccessText, PermissionsText } from '../components/access-form';
import { Layout } from '../components/layout';
import { MadeAndUsedCells } from '../components/time';
import { REGISTRATION_TEXT, clientName } from './connected-app-parts';
import { Notice } from '../components/notice';

const BASE = '/settings/connected-apps';

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
export function ConnectedAppsListPage(props: { person: Person; grants: GrantView[]; mcpUrl: string; notice?: string }) {
  const { grants } = props;
  return (
    <Layout title="Connected apps" person={props.person} current={BASE}>
      <Notice notice={props.notice} />
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

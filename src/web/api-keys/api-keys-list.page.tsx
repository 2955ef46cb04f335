import { Person } from '../../identity/principal';
import { PersonApiKeyView } from '../../auth/person-api-keys.service';
import { ChannelAccessText, PermissionsText } from '../components/access-form';
import { Layout } from '../components/layout';
import { MadeAndUsedCells } from '../components/time';
import { Notice } from '../components/notice';

const BASE = '/settings/api-keys';

function PencilIcon() {
  return (
    <svg aria-hidden="true" focusable="false" width="16" height="16" viewBox="0 0 16 16">
      <path
        fill="currentColor"
        d="M11.7 1.3a1 1 0 0 1 1.4 0l1.6 1.6a1 1 0 0 1 0 1.4L5.4 13.6 1.5 14.5l.9-3.9 9.3-9.3zM3.3 11.1l-.4 1.9 1.9-.4 7.6-7.6-1.5-1.5-7.6 7.6z"
      />
    </svg>
  );
}

/** The list: the person's keys first, then (OWNER, ADMIN) the org's other keys with their owner's email. */
export function ApiKeysListPage(props: { person: Person; keys: PersonApiKeyView[]; notice?: string }) {
  const { person, keys } = props;
  const seesOthers = person.role === 'OWNER' || person.role === 'ADMIN';
  return (
    <Layout title="API keys" person={person} current={BASE}>
      <Notice notice={props.notice} />
      <div class="toolbar">
        <p class="muted">
          Programs and AI agents use an API key to call the MCP endpoint as you. A key reaches all your channels, or only the lines you choose, and may read,
          send, manage webhooks, or any of these.
        </p>
        <a class="button" href={`${BASE}/new`}>
          New key
        </a>
      </div>
      {keys.length === 0 ? (
        <p>You have no API keys yet.</p>
      ) : (
        <div class="table-scroll">
          <table class="data keys">
            <caption class="visually-hidden">{seesOthers ? 'API keys of your organization, yours first' : 'Your API keys'}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Channel access</th>
                <th scope="col">Permissions</th>
                {seesOthers ? <th scope="col">Owner</th> : null}
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((key) => (
                <tr key={key.id}>
                  <th scope="row">{key.name}</th>
                  <td data-label="Key">
                    <code>{key.keyHint}</code>
                  </td>
                  <td data-label="Channel access">
                    <span class="access">
                      <ChannelAccessText access={key.channelAccess} />
                      {key.mine ? (
                        <a class="icon-link" href={`${BASE}/${key.id}/edit`} title="Edit channel access and permissions">
                          <PencilIcon />
                          <span class="visually-hidden">Edit channel access for {key.name}</span>
                        </a>
                      ) : null}
                    </span>
                  </td>
                  <td>
                    <PermissionsText permissions={key.permissions} />
                  </td>
                  {seesOthers ? <td data-label="Owner">{key.mine ? <span class="muted">you</span> : key.owner.email}</td> : null}
                  <MadeAndUsedCells madeLabel="Created" made={key.createdAt} lastUsed={key.lastUsedAt} />
                  <td>
                    <a class="danger-link" href={`${BASE}/${key.id}/revoke`}>
                      Revoke<span class="visually-hidden"> {key.name}</span>
                    </a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Layout>
  );
}

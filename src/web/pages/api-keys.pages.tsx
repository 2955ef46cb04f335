import { API_KEY_NAME_MAX_LENGTH } from '../../auth/api-key-rules';
import { KEY_PERMISSIONS } from '../../identity/key-permissions';
import { Person } from '../../identity/principal';
import { PersonApiKeyView } from '../../auth/person-api-keys.service';
import {
  AccessEditForm,
  AccessFormErrors,
  ChannelAccessChoice,
  ChannelAccessFields,
  ChannelAccessText,
  PermissionsFields,
  PermissionsText,
} from './access-form';
import { MadeAndUsedCells } from '../components/time';
import { CsrfField } from './csrf-field';
import { ConfirmForm, FieldError } from './form-parts';
import { Layout } from './layout';

const BASE = '/settings/api-keys';

/** The notices the list shows after a change (the `notice` query parameter; nothing from it is echoed). */
export const NOTICES = {
  saved: 'Channel access and permissions saved. The next request with the key uses them.',
  revoked: 'The key was revoked. Requests with it are now refused.',
} as const;
export type NoticeKind = keyof typeof NOTICES;

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
export function ApiKeysListPage(props: { person: Person; keys: PersonApiKeyView[]; notice?: NoticeKind }) {
  const { person, keys } = props;
  const seesOthers = person.role === 'OWNER' || person.role === 'ADMIN';
  return (
    <Layout title="API keys" person={person} current={BASE}>
      {props.notice ? (
        <p class="notice success" role="status">
          {NOTICES[props.notice]}
        </p>
      ) : null}
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

/** New key: a name, channel access, permissions, Create key. */
export function NewApiKeyPage(props: {
  person: Person;
  name?: string;
  choice?: ChannelAccessChoice;
  permissions?: readonly string[];
  errors?: AccessFormErrors;
}) {
  const errors = props.errors ?? {};
  return (
    <Layout title="New API key" person={props.person} current={BASE}>
      {errors.name || errors.channelAccess || errors.permissions ? (
        <p class="notice error" role="alert">
          The key was not created: see below.
        </p>
      ) : null}
      <form method="post" action={BASE} class="stack form">
        <CsrfField person={props.person} />
        <label for="name">Name</label>
        <p class="hint" id="name-hint">
          How you will tell this key apart, such as the program that uses it.
        </p>
        <FieldError id="name-error" error={errors.name} />
        <input
          id="name"
          name="name"
          type="text"
          required
          maxLength={API_KEY_NAME_MAX_LENGTH}
          value={props.name ?? ''}
          aria-describedby={errors.name ? 'name-error name-hint' : 'name-hint'}
          aria-invalid={errors.name ? 'true' : undefined}
        />
        <ChannelAccessFields lines={props.person.lines} choice={props.choice ?? { mode: 'ALL', lineIds: [] }} error={errors.channelAccess} />
        <PermissionsFields chosen={props.permissions ?? KEY_PERMISSIONS} error={errors.permissions} />
        <div class="actions">
          <button type="submit">Create key</button>
          <a href={BASE}>Cancel</a>
        </div>
      </form>
    </Layout>
  );
}

/** The answer to Create key: the only time the secret is ever shown. */
export function ApiKeyCreatedPage(props: { person: Person; secret: string; apiKey: PersonApiKeyView }) {
  return (
    <Layout title="API key created" person={props.person} current={BASE}>
      <p class="notice warning" role="status">
        Copy the key now. It will not be shown again: we keep only a hash of it. If you lose it, revoke it and create a new one.
      </p>
      <div class="stack form secret-form">
        <label for="new-key">Your new API key</label>
        <p class="hint" id="new-key-hint">
          For “{props.apiKey.name}”. Send it as <code>Authorization: Bearer …</code> to <code>/api/mcp</code>.
        </p>
        <div class="copy-row">
          <input
            id="new-key"
            class="secret"
            type="text"
            readOnly
            size={props.secret.length}
            value={props.secret}
            aria-describedby="new-key-hint"
            autocomplete="off"
            spellcheck={false}
          />
          <button type="button" class="secondary" data-copy="new-key" hidden>
            Copy
          </button>
        </div>
        <p class="hint" aria-live="polite" data-copy-status="new-key"></p>
      </div>
      <p>
        <a href={BASE}>Back to API keys</a>
      </p>
    </Layout>
  );
}

/** Edit channel access and permissions of one of the person's own keys. */
export function EditApiKeyPage(props: {
  person: Person;
  apiKey: PersonApiKeyView;
  choice: ChannelAccessChoice;
  permissions: readonly string[];
  errors?: AccessFormErrors;
}) {
  const { apiKey } = props;
  return (
    <Layout title={`Access of “${apiKey.name}”`} person={props.person} current={BASE}>
      <p class="muted">
        Key <code>{apiKey.keyHint}</code>. A change applies to the next request made with the key.
      </p>
      <AccessEditForm
        person={props.person}
        action={`${BASE}/${apiKey.id}/edit`}
        cancel={BASE}
        choice={props.choice}
        permissions={props.permissions}
        errors={props.errors}
      />
    </Layout>
  );
}

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

/** A key that is not there (404) or not the person's to change (403), inside the layout. */
export function ApiKeyProblemPage(props: { person: Person; title: string; message: string }) {
  return (
    <Layout title={props.title} person={props.person} current={BASE}>
      <p>{props.message}</p>
      <p>
        <a href={BASE}>Back to API keys</a>
      </p>
    </Layout>
  );
}

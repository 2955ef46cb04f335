import { LineRef } from '../../accounts/accounts.service';
import { API_KEY_NAME_MAX_LENGTH } from '../../auth/api-key-rules';
import { KEY_PERMISSIONS, KeyPermission } from '../../auth/key-permissions';
import { Person } from '../../auth/person';
import { PersonApiKeyView } from '../../auth/person-api-keys.service';
import { CsrfField } from './csrf-field';
import { ConfirmForm } from './form-parts';
import { Layout } from './layout';

const BASE = '/settings/api-keys';

/** What the channel-access controls show: the chosen mode and the ticked lines (ids). */
export interface ChannelAccessChoice {
  mode: string;
  lineIds: string[];
}

/** Errors of a key form, by the field they name: the name field, the channel-access or the permissions fieldset. */
export interface KeyFormErrors {
  name?: string;
  channelAccess?: string;
  permissions?: string;
}

/**
 * The permission checkboxes are `permission-<name>`; the hidden PERMISSIONS_SHOWN field says the
 * form showed them, so that none ticked means none (refused), not "left out" (all, or unchanged).
 */
export const PERMISSION_FIELD = 'permission-';
export const PERMISSIONS_SHOWN = 'permissions-shown';

/** How the form and the list name each permission, and what it allows. */
const PERMISSION_TEXT: Record<KeyPermission, { label: string; hint: string }> = {
  read: { label: 'Read', hint: 'Read threads, messages, attachments, contacts, agent turns and lines.' },
  send: { label: 'Send', hint: 'Send SMS and email, reply, and change contacts, labels and agent turns.' },
  webhooks: { label: 'Webhooks', hint: 'Register, change and delete webhooks, and read and resend their deliveries.' },
};

/** The notices the list shows after a change (the `notice` query parameter; nothing from it is echoed). */
export const NOTICES = {
  saved: 'Channel access and permissions saved. The next request with the key uses them.',
  revoked: 'The key was revoked. Requests with it are now refused.',
} as const;
export type NoticeKind = keyof typeof NOTICES;

/** A date to the minute, in UTC, the same on every machine. */
function formatDate(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function DateCell(props: { date: Date | null }) {
  if (props.date === null) return <span class="muted">never</span>;
  return <time dateTime={props.date.toISOString()}>{formatDate(props.date)}</time>;
}

/** All channels, or the chosen lines by address (an API key's or an OAuth grant's); an address that is no longer a line is said so. */
export function ChannelAccessText(props: { access: { mode: 'ALL' } | { mode: 'LINES'; lines: Array<{ id: string | null; address: string }> } }) {
  if (props.access.mode === 'ALL') return <>All channels</>;
  return (
    <ul class="plain">
      {props.access.lines.map((line) => (
        <li key={line.address}>
          {line.address}
          {line.id === null ? <span class="muted"> (no longer a line: grants nothing)</span> : null}
        </li>
      ))}
    </ul>
  );
}

export function PermissionsText(props: { permissions: KeyPermission[] }) {
  return <>{props.permissions.map((permission) => PERMISSION_TEXT[permission].label).join(', ')}</>;
}

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
          <table class="data">
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
                  <td>
                    <code>{key.keyHint}</code>
                  </td>
                  <td>
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
                  {seesOthers ? <td>{key.mine ? <span class="muted">you</span> : key.owner.email}</td> : null}
                  <td>
                    <DateCell date={key.createdAt} />
                  </td>
                  <td>
                    <DateCell date={key.lastUsedAt} />
                  </td>
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

function FieldError(props: { id: string; message?: string }) {
  if (!props.message) return null;
  return (
    <p id={props.id} class="field-error">
      {props.message}
    </p>
  );
}

function lineLabel(line: LineRef): string {
  return line.type === 'EMAIL_ACCOUNT' ? 'email' : 'phone';
}

/** All channels, or some of the person's own lines: a radio pair, then one checkbox per line. Works without script. */
export function ChannelAccessFields(props: { lines: LineRef[]; choice: ChannelAccessChoice; error?: string }) {
  const { lines, choice, error } = props;
  const specific = choice.mode === 'LINES';
  return (
    <fieldset class="channel-access" aria-describedby={error ? 'access-error' : undefined} aria-invalid={error ? 'true' : undefined}>
      <legend>Channel access</legend>
      <FieldError id="access-error" message={error} />
      <div class="choice">
        <input type="radio" id="access-all" name="access" value="ALL" checked={!specific} />
        <label for="access-all">All channels</label>
        <p class="hint">Every line you can use, now and later.</p>
      </div>
      <div class="choice">
        <input type="radio" id="access-lines" name="access" value="LINES" checked={specific} />
        <label for="access-lines">Specific lines</label>
        <p class="hint">Only the lines ticked below.</p>
      </div>
      {lines.length === 0 ? (
        <p class="hint">You are not a member of any line yet.</p>
      ) : (
        <fieldset class="lines">
          <legend class="visually-hidden">Lines for Specific lines</legend>
          {lines.map((line) => (
            <div class="choice" key={line.id}>
              <input type="checkbox" id={`line-${line.id}`} name={`line-${line.id}`} value="on" checked={choice.lineIds.includes(line.id)} />
              <label for={`line-${line.id}`}>{line.address}</label> <span class="muted">({lineLabel(line)})</span>
            </div>
          ))}
        </fieldset>
      )}
    </fieldset>
  );
}

/** Who is given the permissions: an API key, or an app (an OAuth client, at consent); the form speaks of it. */
export type PermissionsHolder = 'key' | 'app';

const PERMISSIONS_HINT: Record<PermissionsHolder, string> = {
  key: 'What the key may do on its channels, never more than you may. Tools a key may not use are hidden from it.',
  app: 'What the app may do on these channels, never more than you may. Tools the app may not use are hidden from it.',
};

/** Read, Send, Webhooks: one checkbox each (all ticked for a new key), and the hidden field saying they were shown. */
export function PermissionsFields(props: { chosen: readonly string[]; error?: string; holder?: PermissionsHolder }) {
  const { chosen, error } = props;
  return (
    <fieldset class="permissions" aria-describedby={error ? 'permissions-error' : 'permissions-hint'} aria-invalid={error ? 'true' : undefined}>
      <legend>Permissions</legend>
      <p class="hint" id="permissions-hint">
        {PERMISSIONS_HINT[props.holder ?? 'key']}
      </p>
      <FieldError id="permissions-error" message={error} />
      <input type="hidden" name={PERMISSIONS_SHOWN} value="on" />
      {KEY_PERMISSIONS.map((permission) => (
        <div class="choice" key={permission}>
          <input
            type="checkbox"
            id={`${PERMISSION_FIELD}${permission}`}
            name={`${PERMISSION_FIELD}${permission}`}
            value="on"
            checked={chosen.includes(permission)}
            aria-describedby={`${PERMISSION_FIELD}${permission}-hint`}
          />
          <label for={`${PERMISSION_FIELD}${permission}`}>{PERMISSION_TEXT[permission].label}</label>
          <p class="hint" id={`${PERMISSION_FIELD}${permission}-hint`}>
            {PERMISSION_TEXT[permission].hint}
          </p>
        </div>
      ))}
    </fieldset>
  );
}

/** New key: a name, channel access, permissions, Create key. */
export function NewApiKeyPage(props: { person: Person; name?: string; choice?: ChannelAccessChoice; permissions?: readonly string[]; errors?: KeyFormErrors }) {
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
        <FieldError id="name-error" message={errors.name} />
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
  errors?: KeyFormErrors;
}) {
  const errors = props.errors ?? {};
  const { apiKey } = props;
  return (
    <Layout title={`Access of “${apiKey.name}”`} person={props.person} current={BASE}>
      <p class="muted">
        Key <code>{apiKey.keyHint}</code>. A change applies to the next request made with the key.
      </p>
      {errors.channelAccess || errors.permissions ? (
        <p class="notice error" role="alert">
          Nothing was changed: see below.
        </p>
      ) : null}
      <form method="post" action={`${BASE}/${apiKey.id}/edit`} class="stack form">
        <CsrfField person={props.person} />
        <ChannelAccessFields lines={props.person.lines} choice={props.choice} error={errors.channelAccess} />
        <PermissionsFields chosen={props.permissions} error={errors.permissions} />
        <div class="actions">
          <button type="submit">Save</button>
          <a href={BASE}>Cancel</a>
        </div>
      </form>
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

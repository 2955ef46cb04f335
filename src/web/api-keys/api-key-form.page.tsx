import { API_KEY_NAME_MAX_LENGTH } from '../../auth/api-key-rules';
import { ALL_KEY_PERMISSIONS } from '../../identity/key-permissions';
import { Person } from '../../identity/principal';
import { PersonApiKeyView } from '../../auth/person-api-keys.service';
import { AccessEditForm, AccessFormErrors, ChannelAccessChoice, ChannelAccessFields, PermissionsFields } from '../components/access-form';
import { CsrfField } from '../components/csrf-field';
import { FieldError } from '../components/form-parts';
import { Layout } from '../components/layout';
import { Notice } from '../components/notice';

const BASE = '/settings/api-keys';

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
      <Notice error={errors.name || errors.channelAccess || errors.permissions ? 'The key was not created: see below.' : undefined} />
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
        <PermissionsFields chosen={props.permissions ?? ALL_KEY_PERMISSIONS} error={errors.permissions} />
        <div class="actions">
          <button type="submit">Create key</button>
          <a href={BASE}>Cancel</a>
        </div>
      </form>
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

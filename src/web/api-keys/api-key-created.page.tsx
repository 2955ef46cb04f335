import { Person } from '../../identity/principal';
import { PersonApiKeyView } from '../../auth/person-api-keys.service';
import { Layout } from '../components/layout';

const BASE = '/settings/api-keys';

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

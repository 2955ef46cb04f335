import { Person } from '../../identity/principal';
import { AuthorizationRequest } from '../../oauth/oauth.service';
import { AccessFormErrors, ChannelAccessChoice, ChannelAccessFields, PermissionsFields } from '../components/access-form';
import { CsrfField } from '../components/csrf-field';
import { HandOffLayout } from '../components/layout';
import { Notice } from '../components/notice';

/** The request's parameters, posted back with the decision and checked again. */
export const REQUEST_FIELDS = ['client_id', 'redirect_uri', 'response_type', 'code_challenge', 'code_challenge_method', 'state', 'resource', 'scope'] as const;

/**
 * Consent (docs/mcp.md, "Connecting Claude, ChatGPT and other OAuth clients"): the app, the host
 * it returns to (its hostname in bold: MCP authorization 2026-07-28 asks that it be clearly shown)
 * with a warning when that host is the person's own computer, and how the app is known; channel
 * access and permissions as for an API key, a permission the app did not ask for (scope) shown but
 * not to be ticked; Allow or Deny. A hand-off (HandOffLayout): no app navigation, and it speaks of
 * connecting an app and granting it access.
 */
export function ConsentPage(props: {
  person: Person;
  request: AuthorizationRequest;
  params: Record<string, string | undefined>;
  choice?: ChannelAccessChoice;
  permissions?: readonly string[];
  errors?: AccessFormErrors;
}) {
  const { person, request, params } = props;
  const errors = props.errors ?? {};
  const name = request.client.name ?? request.client.id;
  const { redirectHost, redirectHostname } = request.client;
  return (
    <HandOffLayout title={`Connect ${name}`} person={person}>
      <div class="stack consent-app">
        <p>
          <strong>{name}</strong> asks for access to your conversations here. Choose which lines it may reach and what it may do: you grant that access to this
          app alone, and can change or revoke it at any time in Settings → Connected apps.
        </p>
        <div class="notice" id="return-host">
          <p>After you choose, you return to</p>
          <p class="return-host">
            <strong>{redirectHostname}</strong>
            {redirectHost.length > redirectHostname.length ? <span class="muted">{redirectHost.slice(redirectHostname.length)}</span> : null}
          </p>
        </div>
        {request.client.loopbackRedirect ? (
          <div class="notice warning" id="loopback-warning">
            <p>
              <strong>This app returns to your own computer ({redirectHostname}).</strong>
            </p>
            <p>
              Any program running on this computer can listen there and claim to be {name}. Allow only if you started connecting {name} yourself, just now, from
              a program on this computer.
            </p>
          </div>
        ) : null}
        {request.client.registration === 'metadata-document' ? (
          <p class="hint">
            This app's identity comes from its metadata document at <strong>{request.client.documentHost}</strong> (its client ID is that document's address):
            the name is what that host publishes. Check it is the app you are connecting.
          </p>
        ) : (
          <p class="hint">
            This app registered itself (Dynamic Client Registration): its name is its own claim. Check the host above is the app you are connecting.
          </p>
        )}
      </div>
      <Notice error={errors.channelAccess || errors.permissions ? 'Nothing was allowed yet: see below.' : undefined} />
      <form method="post" action="/oauth/authorize" class="stack form">
        <CsrfField person={person} />
        {REQUEST_FIELDS.map((field) => (params[field] === undefined ? null : <input type="hidden" name={field} value={params[field]} key={field} />))}
        <ChannelAccessFields lines={person.lines} choice={props.choice ?? { mode: 'ALL', lineIds: [] }} error={errors.channelAccess} />
        <PermissionsFields
          chosen={props.permissions ?? request.scopes.filter((s) => s !== 'draft' || !request.scopes.includes('send'))}
          error={errors.permissions}
          holder="app"
          offered={request.scopes}
        />
        <div class="actions">
          <button type="submit" name="decision" value="allow">
            Allow
          </button>{' '}
          <button type="submit" name="decision" value="deny" class="secondary">
            Deny
          </button>
        </div>
      </form>
    </HandOffLayout>
  );
}

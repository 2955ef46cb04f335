import { Person } from '../../identity/principal';
import { PoliciesOverview } from '../../send-policies/send-policies.service';
import { CsrfField } from '../components/csrf-field';
import { Layout } from '../components/layout';
import { Notice } from '../components/notice';
import { PolicyErrors, PolicyFields, PolicyForm } from './policy-form';

export const BASE = '/settings/send-policies';

const KIND_TEXT = { API_KEY: 'API key', OAUTH_GRANT: 'Connected app' } as const;

/** Settings → Send policies: the org's policy (a form for the OWNER, read-only for others) and its credentials with their overrides. */
export function SendPoliciesPage(props: {
  person: Person;
  overview: PoliciesOverview;
  form: PolicyForm;
  errors: PolicyErrors;
  mayEdit: boolean;
  notice?: string;
}) {
  const { overview, mayEdit } = props;
  return (
    <Layout title="Send policies" person={props.person} current={BASE}>
      <Notice notice={props.notice} />
      <Notice error={props.errors.form} />
      <p class="muted">
        What your API keys and connected apps may send: limits, quiet hours and recipients. Your own sends on these pages are not bound.
        {mayEdit ? '' : " Only your organization's owner may change them."}
      </p>
      <form method="post" action={BASE} class="stack wide">
        <CsrfField person={props.person} />
        <h2>Organization policy</h2>
        <PolicyFields form={props.form} errors={props.errors} readOnly={!mayEdit} />
        {mayEdit ? (
          <div class="actions">
            <button type="submit">Save policy</button>
          </div>
        ) : null}
      </form>
      <h2>Per credential</h2>
      {overview.credentials.length === 0 ? (
        <p>Your organization has no API keys or connected apps yet.</p>
      ) : (
        <div class="table-scroll">
          <table class="data">
            <caption class="visually-hidden">API keys and connected apps of your organization, and their overrides</caption>
            <thead>
              <tr>
                <th scope="col">Credential</th>
                <th scope="col">Owner</th>
                <th scope="col">Override</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {overview.credentials.map((c) => (
                <tr key={c.id}>
                  <th scope="row">
                    {c.name} <span class="muted">({KIND_TEXT[c.kind]})</span>
                  </th>
                  <td data-label="Owner">{c.ownerEmail}</td>
                  <td data-label="Override">{c.override ? 'Yes' : <span class="muted">The org's policy</span>}</td>
                  <td>
                    <a href={`${BASE}/credentials/${c.id}`}>
                      {mayEdit ? (c.override ? 'Change' : 'Override') : 'View'}
                      <span class="visually-hidden"> {c.name}</span>
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

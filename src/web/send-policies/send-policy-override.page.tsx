import { Person } from '../../identity/principal';
import { OverrideView } from '../../send-policies/send-policies.service';
import { CsrfField } from '../components/csrf-field';
import { Layout } from '../components/layout';
import { Notice } from '../components/notice';
import { PolicyErrors, PolicyFields, PolicyForm } from './policy-form';
import { BASE } from './send-policies.page';

/** One credential's override: blank fields take the org's value (shown under each). */
export function SendPolicyOverridePage(props: { person: Person; view: OverrideView; form: PolicyForm; errors: PolicyErrors; mayEdit: boolean }) {
  const { view, mayEdit } = props;
  const base = `${BASE}/credentials/${view.credential.id}`;
  return (
    <Layout title={`Send policy of ${view.credential.name}`} person={props.person} current={BASE}>
      <nav aria-label="Breadcrumb" class="breadcrumb">
        <ol>
          <li>
            <a href={BASE}>Send policies</a>
          </li>
        </ol>
      </nav>
      <Notice error={props.errors.form} />
      <p class="muted">
        {view.credential.kind === 'API_KEY' ? 'API key' : 'Connected app'} of {view.credential.ownerEmail}. A field set here replaces the org's; a blank one
        takes the org's value.
      </p>
      <form method="post" action={base} class="stack wide">
        <CsrfField person={props.person} />
        <PolicyFields form={props.form} errors={props.errors} override={view.org} readOnly={!mayEdit} />
        {mayEdit ? (
          <div class="actions">
            <button type="submit">Save override</button>
            <a href={BASE}>Cancel</a>
          </div>
        ) : null}
      </form>
      {mayEdit && view.override ? (
        <form method="post" action={`${base}/remove`} class="actions">
          <CsrfField person={props.person} />
          <button type="submit" class="danger">
            Remove override
          </button>
        </form>
      ) : null}
    </Layout>
  );
}

import { Person } from '../../identity/principal';
import { Layout } from '../components/layout';

const BASE = '/settings/api-keys';

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

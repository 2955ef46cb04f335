import { Person } from '../../identity/principal';
import { Layout } from '../components/layout';

const BASE = '/settings/connected-apps';

/** A grant that is not there, or not the person's: one 404 page for both. */
export function ConnectedAppNotFoundPage(props: { person: Person }) {
  return (
    <Layout title="Connected app not found" person={props.person} current={BASE}>
      <p>There is no such app among the apps you connected. It may have been disconnected already.</p>
      <p>
        <a href={BASE}>Back to Connected apps</a>
      </p>
    </Layout>
  );
}

import { Person } from '../../identity/principal';
import { EmailAccountMailbox } from '../../channels/email/mailboxes/mailboxes.service';
import { ConfirmForm } from '../components/form-parts';
import { Layout } from '../components/layout';

const BASE = '/settings/mailboxes';

/** Disconnect: a confirmation page. */
export function DisconnectMailboxPage(props: { person: Person; account: EmailAccountMailbox }) {
  const { account } = props;
  return (
    <Layout title="Disconnect mailbox" person={props.person} current={BASE}>
      <p>
        Disconnect the mailbox of <strong>{account.emailAddress}</strong>? Its mail is no longer synced, its email is sent through the service's own mail server
        again, and the stored passwords are deleted. Messages already imported stay.
      </p>
      <ConfirmForm person={props.person} action={`${BASE}/${account.lineId}/disconnect`} cancel={BASE}>
        Disconnect mailbox
      </ConfirmForm>
    </Layout>
  );
}

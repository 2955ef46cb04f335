import { Person } from '../../identity/principal';
import { MailboxHealth } from '../../channels/email/mailbox-health/mailbox-health.service';
import { MailTls } from '../../channels/email/mailboxes/mailbox.entity';
import { EmailAccountMailbox, MailboxView } from '../../channels/email/mailboxes/mailboxes.service';
import { Layout } from '../components/layout';
import { Time } from '../components/time';
import { Notice } from '../components/notice';

const BASE = '/settings/mailboxes';

/** In the list, where room is short. */
const TLS_SHORT: Record<MailTls, string> = { implicit: 'TLS', starttls: 'STARTTLS', none: 'no TLS' };

/** An email address that may break after its @ when the column is narrow, and nowhere else. */
function Address(props: { address: string }) {
  const at = props.address.lastIndexOf('@');
  if (at < 0) return <>{props.address}</>;
  return (
    <>
      {props.address.slice(0, at + 1)}
      <wbr />
      {props.address.slice(at + 1)}
    </>
  );
}

function ServerText(props: { server: MailboxView['imap'] }) {
  const { server } = props;
  return (
    <>
      <span class="nowrap">
        <code>
          {server.host}:{server.port}
        </code>{' '}
        <span class="muted">{TLS_SHORT[server.tls]}</span>
      </span>
      <br />
      <Address address={server.username} />
    </>
  );
}

const HEALTH_TEXT: Record<string, string> = {
  AUTH: 'Login refused: the sync stopped until the connection is changed',
  NETWORK: 'Server unreachable',
  RATE_LIMIT: 'Throttled by the server',
};

function HealthText(props: { account: EmailAccountMailbox }) {
  const { mailbox, health } = props.account;
  if (!mailbox) return <span class="muted">—</span>;
  if (!health) return <span class="muted">Waiting for the first sync</span>;
  if (health.status === 'healthy') return <HealthyText health={health} />;
  return (
    <>
      <span class="status status-failed">{HEALTH_TEXT[health.errorKind ?? ''] ?? 'Not syncing'}</span>
      {health.since ? (
        <>
          {' '}
          since <Time at={health.since} precision="minute" />
        </>
      ) : null}
      {health.error ? <p class="hint">{health.error}</p> : null}
    </>
  );
}

function HealthyText(props: { health: MailboxHealth }) {
  return (
    <>
      <span class="status status-active">Syncing</span>
      {props.health.lastSyncedAt ? (
        <p class="hint">
          Last synced <Time at={props.health.lastSyncedAt} precision="minute" />
        </p>
      ) : null}
    </>
  );
}

/** Settings → Mailboxes: the org's email account lines, whether each is connected, and its sync's health. */
export function MailboxesPage(props: { person: Person; accounts: EmailAccountMailbox[]; notice?: string }) {
  return (
    <Layout title="Mailboxes" person={props.person} current={BASE}>
      <Notice notice={props.notice} />
      <p class="muted">
        An email account line can be connected to its mailbox: its INBOX is synced over IMAP, and its email is sent through its own SMTP server, with a copy in
        its Sent folder.
      </p>
      {props.accounts.length === 0 ? (
        <p>Your organization has no email account lines yet.</p>
      ) : (
        <div class="table-scroll">
          <table class="data">
            <caption class="visually-hidden">Email account lines of your organization</caption>
            <thead>
              <tr>
                <th scope="col">Email account</th>
                <th scope="col">IMAP</th>
                <th scope="col">SMTP</th>
                <th scope="col">Sync</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {props.accounts.map((account) => (
                <tr key={account.lineId}>
                  <th scope="row">
                    <Address address={account.emailAddress} />
                  </th>
                  {account.mailbox ? (
                    <>
                      <td data-label="IMAP">
                        <ServerText server={account.mailbox.imap} />
                      </td>
                      <td data-label="SMTP">
                        <ServerText server={account.mailbox.smtp} />
                      </td>
                    </>
                  ) : (
                    <td colSpan={2} class="muted">
                      Not connected
                    </td>
                  )}
                  <td data-label="Sync">
                    <HealthText account={account} />
                  </td>
                  <td>
                    <ul class="plain row-actions">
                      <li>
                        <a href={`${BASE}/${account.lineId}`}>
                          {account.mailbox ? 'Change' : 'Connect'}
                          <span class="visually-hidden"> {account.emailAddress}</span>
                        </a>
                      </li>
                      {account.mailbox ? (
                        <li>
                          <a class="danger-link" href={`${BASE}/${account.lineId}/disconnect`}>
                            Disconnect<span class="visually-hidden"> {account.emailAddress}</span>
                          </a>
                        </li>
                      ) : null}
                    </ul>
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

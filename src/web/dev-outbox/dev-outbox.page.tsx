import { Person } from '../../identity/principal';
import { OutboxMessage } from '../../conversations/outbound/outbound.repository';
import { Time } from '../components/time';
import { Layout } from '../components/layout';

/**
 * Development → Outbox: the latest messages sent from the person's lines, newest first: where each
 * went, its status and, when it FAILED, why. The same list as JSON: /dev/outbox.json.
 */
export function DevOutboxPage(props: { person: Person; messages: OutboxMessage[]; size: number }) {
  const { messages } = props;
  return (
    <Layout title="Outbox (development)" person={props.person} current="/dev/outbox">
      <p class="muted">
        The latest {props.size} messages sent from your lines, newest first. In development, SMS go to the development carrier unless SMS_CARRIER_URL is set,
        and email to the development mailer unless SMTP_URL is set (or the line has a mailbox of its own): they are logged, not sent. The same list as JSON:{' '}
        <a href="/dev/outbox.json">/dev/outbox.json</a>.
      </p>
      {messages.length === 0 ? (
        <p>Nothing has been sent from your lines yet.</p>
      ) : (
        <div class="table-scroll">
          <table class="data">
            <caption class="visually-hidden">Messages sent from your lines, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Queued</th>
                <th scope="col">Channel</th>
                <th scope="col">From</th>
                <th scope="col">To</th>
                <th scope="col">Message</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {messages.map((m) => (
                <tr key={m.id}>
                  <td data-label="Queued">
                    <Time at={m.createdAt} precision="minute" />
                  </td>
                  <td data-label="Channel">{m.channel}</td>
                  <td data-label="From" class="address">
                    {m.fromIdentity.value}
                  </td>
                  <td data-label="To" class="address">
                    {m.toIdentity.value}
                  </td>
                  <td data-label="Message">
                    {m.subject !== null ? <strong class="outbox-subject">{m.subject}</strong> : null}
                    <span class="outbox-body">{m.body}</span>
                  </td>
                  <td data-label="Status">
                    {m.status}
                    {m.error !== null ? <p class="hint">{m.error}</p> : null}
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

import { Person } from '../../identity/principal';
import { MailLoginError, MailLoginFailure, MailServerRole } from '../../channels/email/mailboxes/mail-servers';
import { MAIL_TLS_MODES, MailTls } from '../../channels/email/mailboxes/mailbox.entity';
import { EmailAccountMailbox } from '../../channels/email/mailboxes/mailboxes.service';
import { UnprocessableError } from '../../common/errors';
import { CsrfField } from '../components/csrf-field';
import { FieldError } from '../components/form-parts';
import { Layout } from '../components/layout';
import { Notice } from '../components/notice';

const BASE = '/settings/mailboxes';

const ROLES: MailServerRole[] = ['imap', 'smtp'];

const SERVER_NAMES: Record<MailServerRole, string> = { imap: 'IMAP', smtp: 'SMTP' };

const SERVER_KEYS = ['host', 'port', 'tls', 'username', 'password'] as const;

type ServerKey = (typeof SERVER_KEYS)[number];

/** A mail server's fields as typed; never a password (it is not shown again, even after a refusal). */
export interface ServerForm {
  host: string;
  port: string;
  tls: string;
  username: string;
}

export type MailboxForm = Record<MailServerRole, ServerForm>;

/** The fields an error is shown next to (`imap.port`, the service's own names); `form` is the form as a whole. */
export type MailboxField = `${MailServerRole}.${ServerKey}`;

export type MailboxErrors = Partial<Record<MailboxField | 'form', string>>;

export const MAILBOX_FIELDS: MailboxField[] = ROLES.flatMap((role) => SERVER_KEYS.map((key) => `${role}.${key}` as MailboxField));

const LABELS: Record<ServerKey, string> = { host: 'Host', port: 'Port', tls: 'TLS', username: 'Username', password: 'Password' };

const TLS_TEXT: Record<MailTls, string> = { implicit: 'Implicit TLS', starttls: 'STARTTLS', none: 'No TLS (development only)' };

/** The form of a line: its connection when it has one (never a password), else the usual ports and the line's address as usernames. */
export function formOf(account: EmailAccountMailbox): MailboxForm {
  const server = (role: MailServerRole, port: number, tls: MailTls): ServerForm => {
    const stored = account.mailbox?.[role];
    return stored
      ? { host: stored.host, port: String(stored.port), tls: stored.tls, username: stored.username }
      : { host: '', port: String(port), tls, username: account.emailAddress };
  };
  return { imap: server('imap', 993, 'implicit'), smtp: server('smtp', 465, 'implicit') };
}

/** A field's message as a sentence about the field: `imap.port must not be …` → `Port must not be …`. */
export function fieldMessage(field: MailboxField, message: string): string {
  const key = field.split('.')[1] as ServerKey;
  const text = message.startsWith(field) ? `${LABELS[key]}${message.slice(field.length).replace(/^:/, '')}` : message;
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/**
 * Why a login check failed, as a sentence naming the server and what to check; the service's own
 * message (with the server's answer) follows as the detail.
 */
export function loginFailureSentence(error: UnprocessableError): string {
  const role = (error.field === 'smtp' ? 'smtp' : 'imap') as MailServerRole;
  const server = `The ${SERVER_NAMES[role]} server`;
  const reason: MailLoginFailure | undefined = error instanceof MailLoginError ? error.reason : undefined;
  switch (reason) {
    case 'auth':
      return `${server} refused the login: check the username and password.`;
    case 'rate_limit':
      return `${server} is throttling this account: wait a few minutes, then try again.`;
    case 'connection':
      return `${server} could not be reached: check the host and port.`;
    case 'tls':
      return `The TLS handshake with the ${SERVER_NAMES[role]} server failed: check the TLS setting for this port, and that the server's certificate is valid for its host name.`;
    case 'timeout':
      return `${server} did not answer in time: check the host, the port and the TLS setting.`;
    default:
      return `${server} could not be used.`;
  }
}

/** One server's fields; each error sits next to its field (ids `imap-port`, errors `imap-port-error`). */
function ServerFields(props: { role: MailServerRole; form: ServerForm; errors: MailboxErrors }) {
  const { role, form, errors } = props;
  const id = (key: ServerKey) => `${role}-${key}`;
  const error = (key: ServerKey) => errors[`${role}.${key}`];
  const described = (key: ServerKey, hint?: boolean) =>
    [error(key) ? `${id(key)}-error` : '', hint ? `${id(key)}-hint` : ''].filter(Boolean).join(' ') || undefined;
  const input = (key: ServerKey, attributes: Record<string, unknown>, hint?: string) => (
    <div class="field">
      <label for={id(key)}>{LABELS[key]}</label>
      <input
        id={id(key)}
        name={`${role}.${key}`}
        required
        aria-invalid={error(key) ? 'true' : undefined}
        aria-describedby={described(key, hint !== undefined)}
        {...attributes}
      />
      {hint ? (
        <p class="hint" id={`${id(key)}-hint`}>
          {hint}
        </p>
      ) : null}
      <FieldError id={`${id(key)}-error`} error={error(key)} />
    </div>
  );
  const ports = role === 'imap' ? '993 with implicit TLS, 143 with STARTTLS' : '465 with implicit TLS, 587 with STARTTLS';
  return (
    <fieldset class="stack">
      <legend>{role === 'imap' ? 'IMAP server (incoming mail)' : 'SMTP server (outgoing mail)'}</legend>
      {input('host', { type: 'text', value: form.host, maxLength: 253, autocomplete: 'off', spellcheck: false }, `For example ${role}.example.com.`)}
      {input('port', { type: 'number', value: form.port, min: 1, max: 65535, step: 1 }, `Usually ${ports}.`)}
      <div class="field">
        <label for={id('tls')}>TLS</label>
        <select id={id('tls')} name={`${role}.tls`} aria-invalid={error('tls') ? 'true' : undefined} aria-describedby={described('tls')}>
          {MAIL_TLS_MODES.map((mode) => (
            <option key={mode} value={mode} selected={form.tls === mode}>
              {TLS_TEXT[mode]}
            </option>
          ))}
        </select>
        <FieldError id={`${id('tls')}-error`} error={error('tls')} />
      </div>
      {input('username', { type: 'text', value: form.username, maxLength: 320, autocomplete: 'off', spellcheck: false })}
      {input('password', { type: 'password', value: '', maxLength: 1024, autocomplete: 'off' })}
    </fieldset>
  );
}

/** Connect (or change) a line's mailbox: both servers' fields; the logins are checked before anything is saved. */
export function MailboxFormPage(props: {
  person: Person;
  account: EmailAccountMailbox;
  form: MailboxForm;
  errors: MailboxErrors;
  failure?: UnprocessableError;
}) {
  const { account, errors, failure } = props;
  const connected = account.mailbox !== null;
  const base = `${BASE}/${account.lineId}`;
  return (
    <Layout title={connected ? `Change the mailbox of ${account.emailAddress}` : `Connect ${account.emailAddress}`} person={props.person} current={BASE}>
      <nav aria-label="Breadcrumb" class="breadcrumb">
        <ol>
          <li>
            <a href={BASE}>Mailboxes</a>
          </li>
        </ol>
      </nav>
      {failure ? (
        <div class="notice error" role="alert">
          <p>
            <strong>{loginFailureSentence(failure)}</strong> Nothing was saved{connected ? ': the mailbox keeps its current connection' : ''}.
          </p>
          <p class="detail">Details: {failure.message}</p>
        </div>
      ) : null}
      <Notice error={errors.form} />
      <p class="muted">
        Both logins are checked before anything is saved, which can take several seconds. Passwords are stored encrypted and never shown again: enter them each
        time you change the connection.
      </p>
      <form method="post" action={base} class="stack wide">
        <CsrfField person={props.person} />
        {ROLES.map((role) => (
          <ServerFields key={role} role={role} form={props.form[role]} errors={errors} />
        ))}
        <div class="actions">
          <button type="submit" data-busy-text="Checking the IMAP and SMTP logins…">
            {connected ? 'Save' : 'Connect mailbox'}
          </button>
          <a href={BASE}>Cancel</a>
          <span class="visually-hidden" role="status" data-busy-status></span>
        </div>
      </form>
    </Layout>
  );
}

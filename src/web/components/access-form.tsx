import { LineRef } from '../../identity/account.types';
import { KEY_PERMISSIONS, KeyPermission } from '../../identity/key-permissions';
import { AccessView, PersonChannelAccess } from '../../identity/line-selection';
import { Person } from '../../identity/principal';
import { DomainError } from '../../common/errors';
import { FieldTable, Refusal } from '../kit/refusal';
import { CsrfField } from './csrf-field';
import { FieldError } from './form-parts';
import { Notice } from './notice';

/**
 * Channel access and permissions, as a person chooses them for an API key (Settings → API keys)
 * and for an app (consent, and Settings → Connected apps): how they are shown, the form's fields,
 * the edit form both settings pages use, and the posted form read back. One form, as one rule
 * stands behind it (PersonApiKeysService.checkedAccessFor).
 */

/** What the channel-access controls show: the chosen mode and the ticked lines (ids). */
export interface ChannelAccessChoice {
  mode: string;
  lineIds: string[];
}

/** Errors of an access form, by the field they name: a key's name, the channel-access or the permissions fieldset. */
export interface AccessFormErrors {
  name?: string;
  channelAccess?: string;
  permissions?: string;
}

/** Channel access as a key's or a grant's view holds it: all channels, or the chosen lines by address (id null: no longer a line). */
export type ChannelAccessView = AccessView<{ id: string | null; address: string }>;

/**
 * The permission checkboxes are `permission-<name>`; the hidden PERMISSIONS_SHOWN field says the
 * form showed them, so that none ticked means none (refused), not "left out" (all, or unchanged).
 */
export const PERMISSION_FIELD = 'permission-';
export const PERMISSIONS_SHOWN = 'permissions-shown';

/** How the forms and the lists name each permission, and what it allows. */
const PERMISSION_TEXT: Record<KeyPermission, { label: string; hint: string }> = {
  read: { label: 'Read', hint: 'Read threads, messages, attachments, contacts, agent turns and lines.' },
  send: { label: 'Send', hint: 'Send SMS and email, reply, and change contacts, labels and agent turns.' },
  draft: {
    label: 'Draft only',
    hint: 'Propose SMS, email and replies that wait on Approvals for a person to send or reject; nothing is sent by itself. Not with Send.',
  },
  webhooks: { label: 'Webhooks', hint: 'Register, change and delete webhooks, and read and resend their deliveries.' },
};

/** All channels, or the chosen lines by address (an API key's or an OAuth grant's); an address that is no longer a line is said so. */
export function ChannelAccessText(props: { access: ChannelAccessView }) {
  if (props.access.mode === 'ALL') return <>All channels</>;
  return (
    <ul class="plain">
      {props.access.lines.map((line) => (
        <li key={line.address}>
          {line.address}
          {line.id === null ? <span class="muted"> (no longer a line: grants nothing)</span> : null}
        </li>
      ))}
    </ul>
  );
}

export function PermissionsText(props: { permissions: readonly KeyPermission[] }) {
  return <>{props.permissions.map((permission) => PERMISSION_TEXT[permission].label).join(', ')}</>;
}

function lineLabel(line: LineRef): string {
  return line.type === 'EMAIL_ACCOUNT' ? 'email' : 'phone';
}

/** All channels, or some of the person's own lines: a radio pair, then one checkbox per line. Works without script. */
export function ChannelAccessFields(props: { lines: LineRef[]; choice: ChannelAccessChoice; error?: string }) {
  const { lines, choice, error } = props;
  const specific = choice.mode === 'LINES';
  return (
    <fieldset class="channel-access" aria-describedby={error ? 'access-error' : undefined} aria-invalid={error ? 'true' : undefined}>
      <legend>Channel access</legend>
      <FieldError id="access-error" error={error} />
      <div class="choice">
        <input type="radio" id="access-all" name="access" value="ALL" checked={!specific} />
        <label for="access-all">All channels</label>
        <p class="hint">Every line you can use, now and later.</p>
      </div>
      <div class="choice">
        <input type="radio" id="access-lines" name="access" value="LINES" checked={specific} />
        <label for="access-lines">Specific lines</label>
        <p class="hint">Only the lines ticked below.</p>
      </div>
      {lines.length === 0 ? (
        <p class="hint">You are not a member of any line yet.</p>
      ) : (
        <fieldset class="lines">
          <legend class="visually-hidden">Lines for Specific lines</legend>
          {lines.map((line) => (
            <div class="choice" key={line.id}>
              <input type="checkbox" id={`line-${line.id}`} name={`line-${line.id}`} value="on" checked={choice.lineIds.includes(line.id)} />
              <label for={`line-${line.id}`}>{line.address}</label> <span class="muted">({lineLabel(line)})</span>
            </div>
          ))}
        </fieldset>
      )}
    </fieldset>
  );
}

/** Who is given the permissions: an API key, or an app (an OAuth client); the form speaks of it. */
export type PermissionsHolder = 'key' | 'app';

const PERMISSIONS_HINT: Record<PermissionsHolder, string> = {
  key: 'What the key may do on its channels, never more than you may. Tools a key may not use are hidden from it.',
  app: 'What the app may do on these channels, never more than you may. Tools the app may not use are hidden from it.',
};

/** Under a permission an app did not ask for (its box cannot be ticked): an app is given at most what it asked for. */
export const NOT_ASKED_HINT = 'This app did not ask for this permission, so it cannot be given it.';

/**
 * Read, Send, Webhooks: one checkbox each, ticked as `chosen`, and the hidden field saying they
 * were shown. A permission outside `offered` (an app's scope: what it asked for) is shown
 * unticked and disabled, with NOT_ASKED_HINT under it.
 */
export function PermissionsFields(props: { chosen: readonly string[]; error?: string; holder?: PermissionsHolder; offered?: readonly KeyPermission[] }) {
  const { chosen, error } = props;
  const offered = props.offered ?? KEY_PERMISSIONS;
  return (
    <fieldset class="permissions" aria-describedby={error ? 'permissions-error' : 'permissions-hint'} aria-invalid={error ? 'true' : undefined}>
      <legend>Permissions</legend>
      <p class="hint" id="permissions-hint">
        {PERMISSIONS_HINT[props.holder ?? 'key']}
      </p>
      <FieldError id="permissions-error" error={error} />
      <input type="hidden" name={PERMISSIONS_SHOWN} value="on" />
      {KEY_PERMISSIONS.map((permission) => {
        const id = `${PERMISSION_FIELD}${permission}`;
        const asked = offered.includes(permission);
        return (
          <div class="choice" key={permission}>
            <input
              type="checkbox"
              id={id}
              name={id}
              value="on"
              checked={asked && chosen.includes(permission)}
              disabled={!asked}
              aria-describedby={`${id}-hint`}
            />
            <label for={id}>{PERMISSION_TEXT[permission].label}</label>
            <p class="hint" id={`${id}-hint`}>
              {asked ? PERMISSION_TEXT[permission].hint : `${PERMISSION_TEXT[permission].hint} ${NOT_ASKED_HINT}`}
            </p>
          </div>
        );
      })}
    </fieldset>
  );
}

/**
 * The edit form of an API key's or an app's access: "Nothing was changed" above it when a field
 * was refused, the channel-access and permission fields, Save and Cancel. Posts to `action`.
 */
export function AccessEditForm(props: {
  person: Person;
  action: string;
  cancel: string;
  choice: ChannelAccessChoice;
  permissions: readonly string[];
  errors?: AccessFormErrors;
  holder?: PermissionsHolder;
  offered?: readonly KeyPermission[];
}) {
  const errors = props.errors ?? {};
  return (
    <>
      <Notice error={errors.channelAccess || errors.permissions ? 'Nothing was changed: see below.' : undefined} />
      <form method="post" action={props.action} class="stack form">
        <CsrfField person={props.person} />
        <ChannelAccessFields lines={props.person.lines} choice={props.choice} error={errors.channelAccess} />
        <PermissionsFields chosen={props.permissions} error={errors.permissions} holder={props.holder} offered={props.offered} />
        <div class="actions">
          <button type="submit">Save</button>
          <a href={props.cancel}>Cancel</a>
        </div>
      </form>
    </>
  );
}

// ---- the posted form, read back ----

export type Form = Record<string, string | undefined> | undefined;

const LINE_FIELD = 'line-';

/** The channel access a form asks for: `access` (ALL or LINES) and one `line-<id>` checkbox per chosen line. */
export function choiceOf(form: Form): ChannelAccessChoice {
  const fields = form ?? {};
  const lineIds = Object.keys(fields)
    .filter((name) => name.startsWith(LINE_FIELD))
    .map((name) => name.slice(LINE_FIELD.length));
  return { mode: fields.access ?? 'ALL', lineIds };
}

/** What the form shows for a key's or a grant's channel access now: its lines that are still lines, ticked. */
export function choiceOfAccess(access: ChannelAccessView): ChannelAccessChoice {
  if (access.mode === 'ALL') return { mode: 'ALL', lineIds: [] };
  return { mode: 'LINES', lineIds: access.lines.flatMap((line) => (line.id === null ? [] : [line.id])) };
}

/**
 * The permissions a form asks for: the ticked `permission-<name>` boxes, in the form's order, or
 * undefined when the form did not show them (a create then gets all, an edit keeps what it had).
 * An unknown name is passed on for the service to refuse.
 */
export function permissionsOf(form: Form): KeyPermission[] | undefined {
  const fields = form ?? {};
  if (fields[PERMISSIONS_SHOWN] === undefined) return undefined;
  return Object.keys(fields)
    .filter((name) => name.startsWith(PERMISSION_FIELD))
    .map((name) => name.slice(PERMISSION_FIELD.length) as KeyPermission);
}

/** The choice as the service takes it; an unknown mode is passed on for the service to refuse. */
export function accessOf(choice: ChannelAccessChoice): PersonChannelAccess {
  if (choice.mode === 'LINES') return { mode: 'LINES', lineIds: choice.lineIds };
  return { mode: choice.mode } as PersonChannelAccess;
}

/**
 * The service's validation error, in words for the form, next to the field it names (`name`,
 * `permissions`, or `channelAccess…` for the channel-access controls), speaking of the key or of
 * the app. Null when it names none of them.
 */
export function formErrorsOf(error: Pick<DomainError, 'field' | 'message'>, holder: PermissionsHolder = 'key'): AccessFormErrors | null {
  const field = error.field ?? '';
  if (field === 'permissions') {
    if (/at least one/.test(error.message))
      return { permissions: `Choose at least one permission: ${holder === 'app' ? 'an app' : 'a key'} without any could not call any tool.` };
    if (error.message.startsWith('permissions')) return { permissions: `Permissions: ${error.message}` };
    return { permissions: `${error.message.charAt(0).toUpperCase()}${error.message.slice(1)}.` };
  }
  if (field === 'name') {
    const text = error.message.replace(/^name /, '');
    return { name: `The name ${text}.` };
  }
  if (!field.startsWith('channelAccess')) return null;
  if (/at least one line/.test(error.message)) return { channelAccess: 'Choose at least one line for Specific lines, or choose All channels.' };
  if (/is not one of your lines/.test(error.message))
    return { channelAccess: 'One of the chosen lines is not one of your lines: choose among the lines below.' };
  if (/not found$/.test(error.message))
    return { channelAccess: 'One of the chosen lines was not found: it may have been removed. Choose among the lines below.' };
  if (/must be one of ALL, LINES/.test(error.message)) return { channelAccess: 'Choose All channels or Specific lines.' };
  return { channelAccess: `Channel access: ${error.message}` };
}

/** The access form's fields as the service's refusals name them (`channelAccess.lineIds[0]` is `channelAccess`), in the form's words (formErrorsOf). */
export function accessFields(holder: PermissionsHolder = 'key'): FieldTable<keyof AccessFormErrors> {
  return {
    fields: { name: 'name', channelAccess: 'channelAccess', permissions: 'permissions' },
    say: (error, field) => (field && formErrorsOf(error, holder)?.[field]) || error.message,
  };
}

/** A refusal next to its field of the access form; one that names none of its fields goes on to the error page. */
export function accessErrors(refusal: Refusal<keyof AccessFormErrors>): AccessFormErrors {
  if (!refusal.field) throw refusal.error;
  return { [refusal.field]: refusal.message };
}

import { SendPolicyFields } from '../../send-policies/send-policy-rules';
import { FieldError } from '../components/form-parts';

/** A policy form's fields as typed (every value a string, as posted). */
export type PolicyForm = Record<keyof SendPolicyFields, string> & { allowMode: string; denyMode: string };

export type PolicyField = keyof SendPolicyFields | 'form';

export type PolicyErrors = Partial<Record<PolicyField, string>>;

/** Where a field's refusal is shown: each policy field next to itself. */
export const POLICY_FORM_FIELDS: Record<keyof SendPolicyFields, keyof SendPolicyFields> = {
  maxPerHour: 'maxPerHour',
  maxPerDay: 'maxPerDay',
  maxPerRecipientPerDay: 'maxPerRecipientPerDay',
  quietStart: 'quietStart',
  quietEnd: 'quietEnd',
  timeZone: 'timeZone',
  allowList: 'allowList',
  denyList: 'denyList',
  repliesOnly: 'repliesOnly',
};

type Posted = Record<string, string | undefined> | undefined;

const text = (value: string | undefined): string => (typeof value === 'string' ? value : '');

/** The form as posted. */
export function readPolicyForm(body: Posted): PolicyForm {
  return {
    maxPerHour: text(body?.maxPerHour).trim(),
    maxPerDay: text(body?.maxPerDay).trim(),
    maxPerRecipientPerDay: text(body?.maxPerRecipientPerDay).trim(),
    quietStart: text(body?.quietStart).trim(),
    quietEnd: text(body?.quietEnd).trim(),
    timeZone: text(body?.timeZone).trim(),
    allowList: text(body?.allowList),
    denyList: text(body?.denyList),
    repliesOnly: text(body?.repliesOnly),
    allowMode: text(body?.allowMode),
    denyMode: text(body?.denyMode),
  };
}

/** The form of a stored policy (null fields blank). */
export function policyFormOf(p: SendPolicyFields | null): PolicyForm {
  const n = (v: number | null | undefined) => (v === null || v === undefined ? '' : String(v));
  return {
    maxPerHour: n(p?.maxPerHour),
    maxPerDay: n(p?.maxPerDay),
    maxPerRecipientPerDay: n(p?.maxPerRecipientPerDay),
    quietStart: p?.quietStart ?? '',
    quietEnd: p?.quietEnd ?? '',
    timeZone: p?.timeZone ?? '',
    allowList: (p?.allowList ?? []).join('\n'),
    denyList: (p?.denyList ?? []).join('\n'),
    repliesOnly: p?.repliesOnly === null || p?.repliesOnly === undefined ? '' : String(p.repliesOnly),
    allowMode: p?.allowList ? 'set' : '',
    denyMode: p?.denyList ? 'set' : '',
  };
}

/**
 * The policy the form stands for; the service checks the values (naming the field). A blank number
 * or time is null; a number that is not one goes on as NaN, which the service refuses by name. For
 * an override, a list whose mode is not "set" and a blank replies-only inherit (null).
 */
export function policyOfForm(form: PolicyForm, override: boolean): SendPolicyFields {
  const number = (value: string) => (value === '' ? null : /^\d+$/.test(value) ? Number(value) : NaN);
  const list = (value: string, mode: string) =>
    override && mode !== 'set'
      ? null
      : value
          .split(/[\s,]+/)
          .map((entry) => entry.trim())
          .filter(Boolean);
  return {
    maxPerHour: number(form.maxPerHour),
    maxPerDay: number(form.maxPerDay),
    maxPerRecipientPerDay: number(form.maxPerRecipientPerDay),
    quietStart: form.quietStart || null,
    quietEnd: form.quietEnd || null,
    timeZone: form.timeZone || null,
    allowList: list(form.allowList, form.allowMode),
    denyList: list(form.denyList, form.denyMode),
    repliesOnly: form.repliesOnly === 'true' ? true : form.repliesOnly === 'false' ? false : override ? null : false,
  };
}

/**
 * The policy fields of a form: the org's (blank: no such rule) or an override's (blank: the org's
 * value, shown as a hint). `readOnly`: shown disabled, for someone who may not change it.
 */
export function PolicyFields(props: { form: PolicyForm; errors: PolicyErrors; override?: SendPolicyFields; readOnly?: boolean }) {
  const { form, errors, override: org, readOnly } = props;
  const blank = org ? "Blank: the org's value" : 'Blank: no limit';
  const described = (id: string) => [errors[id as PolicyField] ? `${id}-error` : '', `${id}-hint`].filter(Boolean).join(' ');
  const orgValue = (v: unknown) =>
    v === null || v === undefined || (Array.isArray(v) && v.length === 0) ? 'none' : Array.isArray(v) ? v.join(', ') : String(v);
  const hint = (id: keyof SendPolicyFields, own: string) => (
    <p class="hint" id={`${id}-hint`}>
      {own}
      {org ? ` The org's: ${orgValue(org[id])}.` : ''}
    </p>
  );
  /** A one-line field: its label, the input (`attributes`), the hint and the error. */
  const input = (
    id: 'maxPerHour' | 'maxPerDay' | 'maxPerRecipientPerDay' | 'quietStart' | 'quietEnd' | 'timeZone',
    label: string,
    own: string,
    attributes: Record<string, unknown>,
  ) => (
    <div class="field" key={id}>
      <label for={id}>{label}</label>
      <input
        id={id}
        name={id}
        value={form[id]}
        disabled={readOnly}
        aria-invalid={errors[id] ? 'true' : undefined}
        aria-describedby={described(id)}
        {...attributes}
      />
      {hint(id, own)}
      <FieldError id={`${id}-error`} error={errors[id]} />
    </div>
  );
  const numberField = (id: 'maxPerHour' | 'maxPerDay' | 'maxPerRecipientPerDay', label: string, own: string) =>
    input(id, label, `${own} ${blank}.`, { type: 'text', inputmode: 'numeric' });
  const listField = (id: 'allowList' | 'denyList', label: string, own: string) => {
    const mode = id === 'allowList' ? 'allowMode' : 'denyMode';
    return (
      <div class="field">
        <label for={id}>{label}</label>
        {org ? (
          <select id={mode} name={mode} disabled={readOnly} aria-label={`${label}: the org's or this credential's own`}>
            <option value="" selected={form[mode] !== 'set'}>
              The org's list
            </option>
            <option value="set" selected={form[mode] === 'set'}>
              This list (empty: none)
            </option>
          </select>
        ) : null}
        <textarea
          id={id}
          name={id}
          rows={3}
          disabled={readOnly}
          spellcheck={false}
          aria-invalid={errors[id] ? 'true' : undefined}
          aria-describedby={described(id)}
        >
          {form[id]}
        </textarea>
        {hint(id, `${own} One entry a line: an E.164 prefix (+1415), an email domain (example.com) or an address (a@example.com).`)}
        <FieldError id={`${id}-error`} error={errors[id]} />
      </div>
    );
  };
  return (
    <>
      <fieldset class="stack">
        <legend>Limits per credential</legend>
        {numberField('maxPerHour', 'Sends per hour', 'Messages each API key or app may send in the last hour.')}
        {numberField('maxPerDay', 'Sends per day', 'In the last 24 hours.')}
        {numberField('maxPerRecipientPerDay', 'Sends per recipient per day', 'To one address, in the last 24 hours.')}
      </fieldset>
      <fieldset class="stack">
        <legend>Quiet hours</legend>
        <p class="hint">Sends are refused from the start until the end (21:00 to 08:00 crosses midnight); the agent is told when they end and may schedule.</p>
        {input('quietStart', 'Start', `Local time, HH:MM. ${org ? "Blank: the org's" : 'Blank: no quiet hours'}.`, { type: 'time' })}
        {input('quietEnd', 'End', `Local time, HH:MM. ${org ? "Blank: the org's" : 'Blank: no quiet hours'}.`, { type: 'time' })}
        {input('timeZone', 'Time zone', `An IANA zone such as America/New_York. ${org ? "Blank: the org's" : 'Blank: UTC'}.`, {
          type: 'text',
          maxLength: 64,
          spellcheck: false,
        })}
      </fieldset>
      <fieldset class="stack">
        <legend>Recipients</legend>
        {listField('allowList', 'Allow list', 'When not empty, only these recipients.')}
        {listField('denyList', 'Deny list', 'Never these recipients; the deny list wins.')}
        <div class="field">
          <label for="repliesOnly">Replies only</label>
          <select id="repliesOnly" name="repliesOnly" disabled={readOnly} aria-describedby={described('repliesOnly')}>
            {org ? (
              <option value="" selected={form.repliesOnly === ''}>
                The org's setting
              </option>
            ) : null}
            <option value="false" selected={form.repliesOnly === 'false' || (!org && form.repliesOnly === '')}>
              Anyone
            </option>
            <option value="true" selected={form.repliesOnly === 'true'}>
              Only those who wrote first
            </option>
          </select>
          {hint('repliesOnly', 'Only those who wrote to the sending line first, or anyone: whether an agent may start a conversation.')}
          <FieldError id="repliesOnly-error" error={errors.repliesOnly} />
        </div>
      </fieldset>
    </>
  );
}

import { Person } from '../../identity/principal';
import { HelpTextView, mayEditHelpText, STOP_KEYWORDS_TEXT } from '../../opt-outs/opt-outs.service';
import { CsrfField } from '../components/csrf-field';
import { FieldError } from '../components/form-parts';
import { Layout } from '../components/layout';
import { Notice } from '../components/notice';

export const BASE = '/settings/sms-opt-out';

/**
 * Settings → SMS opt-out (docs/opt-out.md): how the service obeys STOP, START and HELP, and the
 * org's answer to HELP, which an OWNER changes here (others read it).
 */
export function SmsOptOutPage(props: { person: Person; help: HelpTextView; form?: string; error?: string; notice?: string }) {
  const { person, help } = props;
  const editable = mayEditHelpText(person.role);
  return (
    <Layout title="SMS opt-out" person={person} current={BASE}>
      <Notice notice={props.notice} />
      <p>
        A number that texts {STOP_KEYWORDS_TEXT} to one of your phone lines is opted out of that line: nothing more is sent to it from there, by a person or an
        agent, until it texts START (or UNSTOP). Its conversation and contact show it. HELP (or INFO) is answered with the text below.
      </p>
      <p class="hint">
        Lines connected to Twilio: Twilio answers STOP, START and HELP itself with its own texts (set them in its Advanced Opt-Out), so the service records the
        opt-out and sends nothing more.
      </p>
      <section aria-labelledby="help-heading">
        <h2 id="help-heading">Answer to HELP</h2>
        {editable ? (
          <form method="post" action={BASE} class="stack wide">
            <CsrfField person={person} />
            <div class="field">
              <label for="helpText">HELP text</label>
              <textarea
                id="helpText"
                name="helpText"
                rows={4}
                maxlength={help.maxChars}
                aria-invalid={props.error ? 'true' : undefined}
                aria-describedby={props.error ? 'helpText-error helpText-hint' : 'helpText-hint'}
                value={props.form ?? help.text}
              />
              <p class="hint" id="helpText-hint">
                At most {help.maxChars} characters. Leave it empty for the default: “{help.defaultText}”
              </p>
              <FieldError id="helpText-error" error={props.error} />
            </div>
            <div class="actions">
              <button type="submit">Save HELP text</button>
            </div>
          </form>
        ) : (
          <>
            <blockquote class="draft-text">{help.text}</blockquote>
            <p class="hint">Only an owner of the organization can change it.</p>
          </>
        )}
      </section>
    </Layout>
  );
}

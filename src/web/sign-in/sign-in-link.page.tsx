import { LinkProblem } from '../../auth/web-sessions/web-sessions.service';
import { PublicLayout } from '../components/layout';

/** A link opened from an email: a button posts the token, so a mail scanner that fetches the link does not use it up. */
export function SignInLinkPage(props: { token: string }) {
  return (
    <PublicLayout title="Sign in">
      <p>Press the button to sign in on this device.</p>
      <form method="post" action="/sign-in/link" class="stack">
        <input type="hidden" name="token" value={props.token} />
        <button type="submit">Sign in</button>
      </form>
    </PublicLayout>
  );
}

const PROBLEMS: Record<LinkProblem, { title: string; text: string }> = {
  invalid: {
    title: 'This sign-in link is not valid',
    text: 'The link is incomplete or was changed. Copy the whole link from the email, or ask for a new one.',
  },
  used: { title: 'This sign-in link was already used', text: 'Each link signs in once. Ask for a new one.' },
  expired: { title: 'This sign-in link has expired', text: 'Links work for 15 minutes. Ask for a new one.' },
};

/** A link that cannot be used says why (400 invalid, 410 used or expired). */
export function LinkProblemPage(props: { problem: LinkProblem }) {
  const { title, text } = PROBLEMS[props.problem];
  return (
    <PublicLayout title={title}>
      <p>{text}</p>
      <p>
        <a href="/sign-in">Request a new sign-in link</a>
      </p>
    </PublicLayout>
  );
}

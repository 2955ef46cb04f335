import { PublicLayout } from '../components/layout';
import { Notice } from '../components/notice';

/** The sign-in form: a labelled Email field and one button. */
export function SignInPage(props: { email?: string; error?: string }) {
  return (
    <PublicLayout title="Sign in">
      <p>We will email you a link that signs you in. It works once, for 15 minutes.</p>
      <Notice error={props.error} />
      <form method="post" action="/sign-in" class="stack">
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="email" required maxLength={254} value={props.email ?? ''} />
        <button type="submit">Email me a sign-in link</button>
      </form>
    </PublicLayout>
  );
}

/** The same answer whether or not the address belongs to a user. */
export function SignInSentPage() {
  return (
    <PublicLayout title="Check your email">
      <p>If this address belongs to an account, a sign-in link is on its way. It works once, for 15 minutes.</p>
      <p>
        <a href="/sign-in">Ask for another link</a>
      </p>
    </PublicLayout>
  );
}

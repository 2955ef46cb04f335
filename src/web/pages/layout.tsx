import type { ComponentChildren } from 'preact';
import { Person } from '../../identity/principal';
import { mayManageMailboxes } from '../../channels/email/mailboxes/mailboxes.service';
import { CsrfField } from './csrf-field';

export const PRODUCT_NAME = 'Messaging Sync';

/** The HTML document: no inline script or style (the CSP forbids them); the stylesheet and script are served under /static. */
export function Document(props: { title: string; children: ComponentChildren }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · ${PRODUCT_NAME}`}</title>
        <link rel="stylesheet" href="/static/app.css" />
        <script src="/static/app.js" defer></script>
      </head>
      <body>{props.children}</body>
    </html>
  );
}

/**
 * The layout of every page of a signed-in person: the product name, the navigation, the person's
 * email and a Sign out button (a POST with the session's CSRF token). `current` marks the nav link
 * of the page (aria-current). Mailboxes is shown only to those who may manage them (OWNER, ADMIN).
 */
export function Layout(props: {
  title: string;
  person: Person;
  current?: '/conversations' | '/approvals' | '/settings/api-keys' | '/settings/connected-apps' | '/settings/webhooks' | '/settings/mailboxes';
  children: ComponentChildren;
}) {
  const nav: Array<[string, string]> = [
    ['/conversations', 'Conversations'],
    ['/approvals', 'Approvals'],
    ['/settings/api-keys', 'API keys'],
    ['/settings/connected-apps', 'Connected apps'],
    ['/settings/webhooks', 'Webhooks'],
    ...(mayManageMailboxes(props.person.role) ? [['/settings/mailboxes', 'Mailboxes'] as [string, string]] : []),
  ];
  return (
    <Document title={props.title}>
      {/* The first stop of the keyboard: past the header's links to the page itself (shown only when focused). */}
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="site-header">
        <a class="brand" href="/">
          {PRODUCT_NAME}
        </a>
        <nav aria-label="Main">
          <ul>
            {nav.map(([href, label]) => (
              <li key={href}>
                <a href={href} aria-current={props.current === href ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="account">
          <span class="email">{props.person.email}</span>
          <form method="post" action="/sign-out">
            <CsrfField person={props.person} />
            <button type="submit" class="link-button">
              Sign out
            </button>
          </form>
        </div>
      </header>
      <main id="main" tabindex={-1}>
        <h1>{props.title}</h1>
        {props.children}
      </main>
    </Document>
  );
}

/** The layout of the pages a person sees before signing in. */
export function PublicLayout(props: { title: string; children: ComponentChildren }) {
  return (
    <Document title={props.title}>
      <header class="site-header">
        <a class="brand" href="/">
          {PRODUCT_NAME}
        </a>
      </header>
      <main class="narrow">
        <h1>{props.title}</h1>
        {props.children}
      </main>
    </Document>
  );
}

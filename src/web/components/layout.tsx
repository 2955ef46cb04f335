import { mayReadAuditTrail } from '../../audit/audit-events.service';
import type { ComponentChildren } from 'preact';
import { useContext } from 'preact/hooks';
import { Person } from '../../identity/principal';
import { mayManageMailboxes } from '../../channels/email/mailboxes/mailboxes.service';
import { CsrfField } from './csrf-field';
import { PageContext } from '../kit/page-context';

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

/** The pages of the main navigation (Layout's `current` names one of them). */
export type NavPath =
  | '/conversations'
  | '/approvals'
  | '/settings/api-keys'
  | '/settings/connected-apps'
  | '/settings/webhooks'
  | '/settings/mailboxes'
  | '/settings/send-policies'
  | '/settings/sms-opt-out'
  | '/settings/audit'
  | '/dev/outbox';

/**
 * The layout of every page of a signed-in person: the product name, the navigation, the person's
 * email and a Sign out button (a POST with the session's CSRF token). `current` marks the nav link
 * of the page (aria-current). Mailboxes and the audit trail are shown only to those who may see them (OWNER, ADMIN);
 * the development outbox only where it exists (APP_ENV=development, PageContext).
 *
 * On a narrow screen the navigation and account fold into a `<details>` disclosure ("Menu"), so
 * the header is one line; on a wide one the stylesheet shows its content whatever its state and
 * hides the summary (no script: the CSP forbids inline script, and none is needed).
 */
export function Layout(props: { title: string; person: Person; current?: NavPath; children: ComponentChildren }) {
  const settings = useContext(PageContext);
  const nav: Array<[NavPath, string]> = [
    ['/conversations', 'Conversations'],
    ['/approvals', 'Approvals'],
    ['/settings/api-keys', 'API keys'],
    ['/settings/connected-apps', 'Connected apps'],
    ['/settings/webhooks', 'Webhooks'],
    ...(mayManageMailboxes(props.person.role) ? [['/settings/mailboxes', 'Mailboxes'] as [NavPath, string]] : []),
    ['/settings/send-policies', 'Send policies'],
    ['/settings/sms-opt-out', 'SMS opt-out'],
    ...(mayReadAuditTrail(props.person.role) ? [['/settings/audit', 'Audit trail'] as [NavPath, string]] : []),
    ...(settings.devOutbox ? [['/dev/outbox', 'Outbox (development)'] as [NavPath, string]] : []),
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
        <details class="menu">
          <summary>Menu</summary>
          <div class="menu-body">
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
            <Account person={props.person} />
          </div>
        </details>
      </header>
      <main id="main" tabindex={-1}>
        <h1>{props.title}</h1>
        {props.children}
      </main>
    </Document>
  );
}

/** Who is signed in, and Sign out (a POST with the session's CSRF token). */
function Account(props: { person: Person }) {
  return (
    <div class="account">
      <span class="email">{props.person.email}</span>
      <form method="post" action="/sign-out">
        <CsrfField person={props.person} />
        <button type="submit" class="link-button">
          Sign out
        </button>
      </form>
    </div>
  );
}

/**
 * The layout of a hand-off a signed-in person passes through on the way back to another app (OAuth
 * consent): the product name and who is signed in, no app navigation to wander off into.
 */
export function HandOffLayout(props: { title: string; person: Person; children: ComponentChildren }) {
  return (
    <Document title={props.title}>
      <header class="site-header">
        <span class="brand">{PRODUCT_NAME}</span>
        <p class="account signed-in-as">
          Signed in as <span class="email">{props.person.email}</span>
        </p>
      </header>
      <main class="narrow" id="main">
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

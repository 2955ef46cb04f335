/**
 * The web app's stylesheet, served by the service itself under /static (no CDN; the CSP allows
 * only 'self', and no inline style or script). Kept as a string so the build copies no asset
 * files. The script is TypeScript: browser/app.ts, bundled by browser-script.ts.
 */
export const APP_CSS = `
:root { --fg: #1d2430; --muted: #5b6472; --line: #d9dee5; --bg: #f6f7f9; --card: #fff; --accent: #2456c7; --error: #b42318; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
.site-header { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 2rem; padding: 0.75rem 1.5rem; background: var(--card); border-bottom: 1px solid var(--line); }
.brand { font-weight: 700; color: var(--fg); text-decoration: none; }
.site-header nav ul { display: flex; flex-wrap: wrap; gap: 0.25rem 1.25rem; list-style: none; margin: 0; padding: 0; }
.site-header nav a { text-decoration: none; }
.site-header nav a[aria-current="page"] { font-weight: 600; text-decoration: underline; }
.account { margin-left: auto; display: flex; flex-wrap: wrap; align-items: center; gap: 0.25rem 1rem; min-width: 0; color: var(--muted); }
.account .email { overflow-wrap: anywhere; }
.account form { margin: 0; }
main { max-width: 60rem; margin: 2rem auto; padding: 0 1.5rem; }
main:focus { outline: none; }
.skip-link { position: absolute; left: 1rem; top: -3rem; z-index: 10; padding: 0.5rem 1rem; background: var(--card); border: 2px solid var(--accent); border-radius: 6px; }
.skip-link:focus { top: 0.5rem; }
main.narrow { max-width: 28rem; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
.stack { display: flex; flex-direction: column; gap: 0.5rem; }
label { font-weight: 600; }
input[type="email"], input[type="text"] { font: inherit; padding: 0.5rem 0.625rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); }
button { font: inherit; padding: 0.5rem 1rem; border: 0; border-radius: 6px; background: var(--accent); color: #fff; cursor: pointer; }
button:focus-visible, a:focus-visible, input:focus-visible { outline: 3px solid #9bb8f5; outline-offset: 2px; }
button.link-button { background: none; color: var(--accent); padding: 0; text-decoration: underline; }
.notice { padding: 0.75rem 1rem; border-radius: 6px; background: var(--card); border: 1px solid var(--line); }
.notice.error { border-color: var(--error); color: var(--error); }
/* Webhooks pages */
.notice.success { border-color: #2e7d4f; color: #1e5c39; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.75rem; }
input[type="url"], input[type="number"], input[type="datetime-local"], select { font: inherit; padding: 0.5rem 0.625rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); }
select:focus-visible, textarea:focus-visible, pre:focus-visible { outline: 3px solid #9bb8f5; outline-offset: 2px; }
input[type="checkbox"]:focus-visible, input[type="radio"]:focus-visible { outline: 3px solid #9bb8f5; outline-offset: 2px; }
.stack.wide { max-width: 40rem; gap: 1.25rem; }
.field { display: flex; flex-direction: column; gap: 0.25rem; }
fieldset { border: 1px solid var(--line); border-radius: 6px; padding: 0.75rem 1rem; margin: 0; background: var(--card); }
legend { font-weight: 600; padding: 0 0.25rem; }
.checks { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 0.25rem; }
.checks label { font-weight: 400; margin-left: 0.375rem; }
.checks.nested { margin: 0.25rem 0 0 1.75rem; }
.hint { margin: 0; color: var(--muted); font-size: 0.875rem; }
.field-error { margin: 0.25rem 0 0; color: var(--error); font-weight: 600; }
[aria-invalid="true"] { border-color: var(--error); }
a.button { display: inline-block; padding: 0.5rem 1rem; border-radius: 6px; background: var(--accent); color: #fff; text-decoration: none; }
button.danger, a.button.danger { background: var(--error); color: #fff; }
.actions { display: flex; flex-wrap: wrap; align-items: center; gap: 0.75rem; margin: 1rem 0; }
.actions form { margin: 0; }
.inline-form { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 0.75rem; margin: 0.75rem 0; }
.breadcrumb ol { display: flex; flex-wrap: wrap; gap: 0.5rem; list-style: none; margin: 0 0 1rem; padding: 0; color: var(--muted); }
.breadcrumb li + li::before { content: "›"; margin-right: 0.5rem; }
table.data { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); font-size: 0.9375rem; }
table.data caption { text-align: left; font-weight: 600; padding: 0.5rem 0; }
table.data th, table.data td { text-align: left; vertical-align: top; padding: 0.5rem 0.625rem; border-bottom: 1px solid var(--line); }
table.data th { background: #eef1f5; font-weight: 600; }
dl.details { display: grid; grid-template-columns: max-content 1fr; gap: 0.375rem 1.25rem; margin: 0 0 1rem; padding: 1rem; background: var(--card); border: 1px solid var(--line); border-radius: 6px; }
dl.details dt { font-weight: 600; }
dl.details dd { margin: 0; }
.url, .mono { word-break: break-all; }
.mono, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.875rem; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; }
pre.payload { padding: 1rem; background: var(--card); border: 1px solid var(--line); border-radius: 6px; max-height: 32rem; overflow: auto; }
pre.body { max-height: 10rem; overflow: auto; }
.status { font-weight: 600; }
.status-active, .status-succeeded { color: #1e5c39; }
.status-disabled, .status-failed { color: var(--error); }
.status-retrying, .status-pending { color: #8a5a00; }
.copy-row { display: flex; gap: 0.5rem; align-items: center; }
.copy-row input { flex: 1; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.copy-status { color: var(--muted); min-width: 4rem; }
/* API keys pages (later: where both style an element, these rules win) */
.notice.success { border-color: #1a7f37; color: #116329; background: #eef8f0; }
.notice.warning { border-color: #b7791f; color: #6b4a0f; background: #fff8e6; }
.muted, .hint { color: var(--muted); }
.hint { margin: 0; font-size: 0.875rem; }
/* Ids read as one value: never broken across lines (a table scrolls instead). A date breaks only
   between its words (date, time, zone), never inside one, so a table of dates still fits a desktop. */
.nowrap, .nowrap.mono { white-space: nowrap; word-break: normal; }
time { word-break: keep-all; overflow-wrap: normal; }
.outbox-subject, .outbox-body { display: block; }
.outbox-body { white-space: pre-wrap; overflow-wrap: anywhere; }
.visually-hidden { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.875em; }
.toolbar { display: flex; align-items: center; justify-content: space-between; gap: 1.5rem; margin-bottom: 1rem; }
.toolbar p { margin: 0; }
a.button { display: inline-block; padding: 0.5rem 1rem; border-radius: 6px; background: var(--accent); color: #fff; text-decoration: none; white-space: nowrap; }
button.secondary { background: var(--card); color: var(--accent); border: 1px solid var(--accent); }
button.danger { background: var(--error); }
a.danger-link { color: var(--error); }
table.data { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line); border-radius: 6px; }
table.data th, table.data td { padding: 0.625rem 0.75rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
table.data thead th { font-size: 0.8125rem; text-transform: uppercase; letter-spacing: 0.03em; color: var(--muted); background: var(--bg); }
table.data tbody th { font-weight: 600; }
table.data thead th, table.data code { white-space: nowrap; }
/* The audit trail's routes and ids: long, so they may break anywhere rather than widen a phone's page. */
table.data.audit code { white-space: normal; overflow-wrap: anywhere; }
/* position: relative, so the visually hidden (absolutely positioned) texts in a table scroll with it, not widen the page. */
.table-scroll { overflow-x: auto; position: relative; }
table.data tbody tr:last-child > * { border-bottom: 0; }
ul.plain { list-style: none; margin: 0; padding: 0; }
.access { display: flex; align-items: flex-start; gap: 0.5rem; }
a.icon-link { display: inline-flex; padding: 0.125rem; border-radius: 4px; color: var(--muted); }
a.icon-link:hover { color: var(--accent); background: var(--bg); }
.form { max-width: 36rem; }
fieldset { margin: 0.75rem 0 0; padding: 0.75rem 1rem 1rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); }
fieldset legend { font-weight: 600; padding: 0 0.25rem; }
fieldset.lines { margin: 0.25rem 0 0 1.75rem; padding: 0.25rem 0 0; border: 0; background: none; }
.choice { margin: 0.375rem 0; }
.choice label { font-weight: 500; margin-left: 0.375rem; }
.choice .hint { margin-left: 1.75rem; }
input[type="radio"], input[type="checkbox"] { width: 1.05rem; height: 1.05rem; vertical-align: -0.15rem; accent-color: var(--accent); }
input[aria-invalid="true"], fieldset[aria-invalid="true"] { border-color: var(--error); }
.field-error { margin: 0; color: var(--error); font-weight: 600; font-size: 0.9375rem; }
.actions { display: flex; align-items: center; gap: 1rem; margin-top: 1rem; }
.copy-row { display: flex; gap: 0.5rem; }
input.secret { flex: 1 1 auto; min-width: 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--bg); }
/* The new key's box is as wide as the key (its size attribute), so the form may be wider than other forms. */
.secret-form { max-width: 44rem; }
input[type="radio"]:focus-visible, input[type="checkbox"]:focus-visible { outline: 3px solid #9bb8f5; outline-offset: 2px; }
/* Mailboxes pages */
input[type="password"] { font: inherit; padding: 0.5rem 0.625rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); }
input[type="number"] { max-width: 10rem; }
/* Send policies: quiet hours */
input[type="time"] { font: inherit; padding: 0.5rem 0.625rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); max-width: 10rem; }
fieldset.stack { gap: 0.75rem; }
button:disabled { opacity: 0.75; cursor: progress; }
.notice p { margin: 0; }
.notice p + p { margin-top: 0.375rem; }
.notice .detail { color: var(--fg); font-size: 0.875rem; word-break: break-word; }
ul.row-actions { display: flex; flex-direction: column; gap: 0.25rem; white-space: nowrap; }
/* A row's links that may wrap (Connected apps: Change access, Revoke), apart enough to read as two. */
ul.row-links { display: flex; flex-direction: column; gap: 0.5rem; }
.nowrap { white-space: nowrap; }
/* Conversations pages */
textarea { font: inherit; width: 100%; padding: 0.5rem 0.625rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); resize: vertical; }
input[type="search"] { font: inherit; padding: 0.5rem 0.625rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); min-width: 0; }
.conversation-tools { display: flex; flex-wrap: wrap; gap: 0 2rem; margin-bottom: 0.5rem; }
.conversation-tools .inline-form { margin: 0 0 0.75rem; }
.search-form .field { flex: 1 1 16rem; }
.filter-form select { max-width: 100%; }
.filter-form .choice { margin: 0 0 0.5rem; }
ul.thread-list { list-style: none; margin: 0; padding: 0; background: var(--card); border: 1px solid var(--line); border-radius: 6px; }
.thread-row { display: grid; grid-template-columns: minmax(0, 1fr) auto; gap: 0.25rem 1rem; padding: 0.75rem 1rem; border-bottom: 1px solid var(--line); }
.thread-row:last-child { border-bottom: 0; }
.thread-link { display: flex; flex-direction: column; min-width: 0; text-decoration: none; color: var(--fg); }
.thread-link .partner { font-weight: 600; color: var(--accent); overflow-wrap: anywhere; }
.thread-link:hover .partner { text-decoration: underline; }
.thread-link .preview { color: var(--muted); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.thread-row .meta { display: flex; flex-wrap: wrap; justify-content: flex-end; align-items: baseline; gap: 0.25rem 0.75rem; font-size: 0.875rem; color: var(--muted); }
.thread-row .chips, .thread-row .snippet { grid-column: 1 / -1; }
.snippet { margin: 0; font-size: 0.9375rem; overflow-wrap: anywhere; }
mark { background: #fff1a8; color: inherit; padding: 0 0.1em; border-radius: 2px; }
.channel { font-weight: 600; color: var(--fg); }
.awaiting { display: inline-block; padding: 0 0.5rem; border-radius: 999px; background: #fff8e6; border: 1px solid #b7791f; color: #6b4a0f; font-size: 0.8125rem; font-weight: 600; }
ul.chips { display: flex; flex-wrap: wrap; gap: 0.375rem; list-style: none; margin: 0; padding: 0; }
.chip { display: inline-flex; align-items: center; gap: 0.25rem; padding: 0.0625rem 0.625rem; border-radius: 999px; background: #e8eefc; color: #1b3f94; font-size: 0.8125rem; overflow-wrap: anywhere; }
.chip form { margin: 0; display: inline; }
button.chip-remove { background: none; color: #1b3f94; padding: 0 0.375rem; min-width: 1.75rem; min-height: 1.75rem; font-size: 1rem; line-height: 1; }
.pager { margin: 1rem 0; }
.thread-meta { color: var(--muted); overflow-wrap: anywhere; }
.thread-layout { display: grid; grid-template-columns: minmax(0, 1fr) 18rem; gap: 1.5rem; align-items: start; }
.thread-side section { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 0 1rem 1rem; margin-bottom: 1rem; }
.thread-side h2 { margin-top: 0.75rem; }
ol.messages { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 0.75rem; }
.message { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 0.75rem 1rem; }
.message.outbound { border-left: 4px solid var(--accent); }
.message.inbound { border-left: 4px solid #8a94a6; }
.message.status-failed { border-color: var(--error); }
.message-head { display: flex; flex-wrap: wrap; gap: 0.25rem 0.75rem; font-size: 0.875rem; color: var(--muted); margin-bottom: 0.5rem; }
.message-head .direction { font-weight: 600; color: var(--fg); }
.message-head .sender { overflow-wrap: anywhere; }
.message-status { font-weight: 600; }
.message-status.status-failed { color: var(--error); }
.message .scheduled { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem; margin-top: 0.5rem; }
.message-status.status-delivered, .message-status.status-sent { color: #1e5c39; }
.message-subject { margin: 0 0 0.5rem; font-weight: 600; overflow-wrap: anywhere; }
.message-body { white-space: pre-wrap; overflow-wrap: anywhere; }
ul.attachments { list-style: none; margin: 0.75rem 0 0; padding: 0; display: flex; flex-direction: column; gap: 0.5rem; }
.attachment { border-top: 1px solid var(--line); padding-top: 0.5rem; overflow-wrap: anywhere; }
details.extracted summary { cursor: pointer; margin: 0.375rem 0; }
pre.extracted-text { max-height: 16rem; overflow: auto; padding: 0.5rem; background: var(--bg); border: 1px solid var(--line); border-radius: 6px; }
dl.invite { margin: 0.5rem 0 0; grid-template-columns: max-content minmax(0, 1fr); }
dl.invite dd { overflow-wrap: anywhere; }
.reply { margin-top: 1.5rem; }
.thread-drafts { margin-top: 1.5rem; }
ol.drafts { list-style: none; margin: 0; padding: 0; }
ol.drafts .approval-meta { margin-bottom: 0.5rem; }
textarea:focus-visible, summary:focus-visible { outline: 3px solid #9bb8f5; outline-offset: 2px; }
@media (max-width: 48rem) {
  main { margin: 1rem auto; padding: 0 1rem; }
  .thread-layout { grid-template-columns: minmax(0, 1fr); }
  .thread-row { grid-template-columns: minmax(0, 1fr); }
  .thread-row .meta { justify-content: flex-start; }
  .conversation-tools .inline-form { width: 100%; }
}
/* Approvals page */
ol.approvals { list-style: none; margin: 1rem 0 0; padding: 0; display: flex; flex-direction: column; gap: 1.25rem; }
.approval { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 1rem 1.25rem; margin-bottom: 1rem; }
.approval h2 { margin: 0 0 0.25rem; font-size: 1.125rem; overflow-wrap: anywhere; }
.approval h3 { margin: 1rem 0 0.5rem; font-size: 0.8125rem; text-transform: uppercase; letter-spacing: 0.03em; color: var(--muted); }
.approval-meta { margin: 0; color: var(--muted); font-size: 0.9375rem; overflow-wrap: anywhere; }
ol.approval-messages { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 0.5rem; }
.approval-message { padding: 0.5rem 0.75rem; border-radius: 6px; background: var(--bg); border-left: 3px solid var(--line); }
.approval-message.outbound { border-left-color: var(--accent); margin-left: 1.5rem; }
.approval-message p { margin: 0; }
.approval-message-meta { color: var(--muted); font-size: 0.875rem; overflow-wrap: anywhere; }
.message-text, .draft-text { white-space: pre-wrap; overflow-wrap: anywhere; }
.approval-draft { padding: 0.75rem; border: 1px dashed var(--accent); border-radius: 6px; background: #f3f6fd; max-height: 16rem; overflow: auto; }
.approval-draft:focus-visible { outline: 3px solid #9bb8f5; outline-offset: 2px; }
.approval-actions { margin-top: 1rem; }
.approval-actions a.button.secondary { background: var(--card); color: var(--accent); border: 1px solid var(--accent); padding: calc(0.5rem - 1px) calc(1rem - 1px); }
.approval-form textarea { font: inherit; width: 100%; min-height: 12rem; padding: 0.5rem 0.625rem; border: 1px solid var(--line); border-radius: 6px; background: var(--card); resize: vertical; }
.approval-form textarea[aria-invalid="true"] { border-color: var(--error); }
nav.pager { display: flex; flex-wrap: wrap; gap: 1rem; margin-top: 1.25rem; }
/* OAuth consent: the app, where it returns (the hostname large, never cut), the warning for this computer */
.consent-app { margin-bottom: 1rem; }
.consent-app p { margin: 0; }
.return-host { font-size: 1.25rem; overflow-wrap: anywhere; }
/* Live updates: the polite status app.js adds ("1 new message"), read by screen readers only. */
.live-status { position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
/* The header (layout.tsx): the navigation and the account sit in a <details> "Menu". On a phone it
   is one line (brand, Menu) and opens over the page; on a wider screen, where the browser lets a
   closed <details> show its content (::details-content), the links show at once and the summary
   is hidden. A browser without that keeps the Menu on every screen. */
.site-header { position: relative; flex-wrap: nowrap; justify-content: space-between; gap: 1rem; padding: 0.625rem 1rem; }
.site-header .signed-in-as { margin: 0 0 0 auto; font-size: 0.875rem; }
.site-header .brand { white-space: nowrap; }
.site-header .signed-in-as { min-width: 0; text-align: right; }
details.menu > summary { list-style: none; cursor: pointer; padding: 0.375rem 0.875rem; border: 1px solid var(--line); border-radius: 6px; color: var(--accent); font-weight: 600; }
details.menu > summary::-webkit-details-marker { display: none; }
details.menu > summary::after { content: " ▾"; }
details.menu[open] > summary::after { content: " ▴"; }
.menu-body { position: absolute; left: 0; right: 0; top: 100%; z-index: 5; padding: 0.5rem 1rem 1rem; background: var(--card); border-bottom: 1px solid var(--line); box-shadow: 0 6px 12px rgb(29 36 48 / 12%); }
.menu-body nav ul { flex-direction: column; gap: 0; }
.menu-body nav a { display: block; padding: 0.5rem 0; }
.menu-body .account { margin: 0.5rem 0 0; padding-top: 0.5rem; border-top: 1px solid var(--line); }
@supports selector(::details-content) {
  @media (min-width: 48rem) {
    .site-header { padding: 0.75rem 1.5rem; gap: 2rem; }
    details.menu { flex: 1 1 auto; min-width: 0; }
    details.menu > summary { display: none; }
    details.menu::details-content { content-visibility: visible; display: contents; }
    .menu-body { position: static; display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 2rem; padding: 0; background: none; border: 0; box-shadow: none; }
    .menu-body nav ul { flex-direction: row; gap: 0.25rem 1.25rem; }
    .menu-body nav a { display: inline; padding: 0; }
    .menu-body .account { margin: 0 0 0 auto; padding: 0; border: 0; }
  }
}
/* The Conversations filters on a phone: the search on one line, the filters folded under it. */
.writer { color: var(--fg); font-weight: 500; }
@media (max-width: 48rem) {
  .conversation-tools { gap: 0; margin-bottom: 0.75rem; }
  .conversation-tools .inline-form { margin: 0 0 0.5rem; gap: 0.5rem; }
  .search-form .field { flex: 1 1 10rem; }
  .search-form .hint { display: none; }
  .filter-form .field { flex: 1 1 8rem; min-width: 0; }
  .filter-form select { width: 100%; }
  .filter-form .choice { margin: 0; }
  main > h1 { margin-bottom: 0.75rem; }
}
/* Long values: an address or URL breaks where it must, at any character, never letter by letter in
   a squeezed column (the column keeps a sensible width instead); ids break anywhere too. */
.url { word-break: normal; overflow-wrap: anywhere; }
td.url { min-width: 16rem; }
td.event-id { overflow-wrap: anywhere; min-width: 19ch; }
/* A heading may wrap between its words, so a table of many columns fits its column on a desktop. */
table.data thead th { white-space: normal; }
td.last-status { overflow-wrap: anywhere; min-width: 8rem; }
td.address { overflow-wrap: anywhere; }
.breadcrumb li { min-width: 0; overflow-wrap: anywhere; }
dl.details { grid-template-columns: max-content minmax(0, 1fr); }
dl.details dd { min-width: 0; overflow-wrap: anywhere; }
@media (max-width: 40rem) {
  dl.details { grid-template-columns: minmax(0, 1fr); gap: 0; }
  dl.details dd + dt { margin-top: 0.5rem; }
  dl.details dd.nowrap { white-space: normal; }
}
/* Tables on a narrow screen: each row a stacked card, its key column (the row heading, or the URL)
   first and whole, then each cell under its label (data-label), the action last: nothing scrolls
   sideways and nothing is hidden to the right. Two cells of API keys and Connected apps carry no
   data-label (their markup is kept as plain <td>, which the pages' tests read): their labels are
   given here by position (.keys, .grants). */
@media (max-width: 40rem) {
  .table-scroll { overflow-x: visible; }
  table.data, table.data tbody, table.data tr, table.data tbody th, table.data td { display: block; width: auto; }
  table.data { border-radius: 6px; }
  table.data thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  table.data caption { display: block; }
  table.data tbody tr { padding: 0.5rem 0; border-bottom: 1px solid var(--line); }
  table.data tbody tr:last-child { border-bottom: 0; }
  table.data tbody tr > * { padding: 0.25rem 0.75rem; border-bottom: 0; }
  table.data tbody th[scope="row"], table.data td.url { font-weight: 600; font-size: 1rem; min-width: 0; }
  table.data td[data-label], table.data.keys td:nth-child(4), .grants table.data td:nth-child(2), .grants table.data td:nth-child(4) { display: flow-root; padding-left: 8.25rem; overflow-wrap: anywhere; min-width: 0; }
  table.data td[data-label]::before, table.data.keys td:nth-child(4)::before, .grants table.data td:nth-child(2)::before, .grants table.data td:nth-child(4)::before {
    content: attr(data-label); float: left; width: 7rem; margin-left: -7.5rem; color: var(--muted); font-size: 0.8125rem; font-weight: 600; line-height: 1.6;
  }
  table.data.keys td:nth-child(4)::before, .grants table.data td:nth-child(4)::before { content: "Permissions"; }
  .grants table.data td:nth-child(2)::before { content: "Returns to"; }
  table.data td .nowrap, table.data td.nowrap, table.data ul.row-actions { white-space: normal; }
  table.data ul.row-actions, table.data ul.row-links { flex-direction: row; flex-wrap: wrap; gap: 0.25rem 1.25rem; }
  table.data pre.body { max-width: 100%; }
}
`;

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
`;

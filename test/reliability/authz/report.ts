import { ResultBuilder } from '../support/results';
import type { EraOutcome, EraTally } from './matrix';

/** The cases, in the order they run and report. */
export type MatrixCase =
  'foreign callers' | 'read-only key' | 'LINES key' | 'access ended' | 'agent routes' | 'OAuth tokens' | 'OAuth endpoints' | 'inbox pages' | 'events';
const CASES: MatrixCase[] = [
  'foreign callers',
  'read-only key',
  'LINES key',
  'access ended',
  'agent routes',
  'OAuth tokens',
  'OAuth endpoints',
  'inbox pages',
  'events',
];

/** The callers of the foreign-callers case, in their figures' order. */
export const CALLERS = ['same-org OWNER', 'LINES key outside its lines', 'same-org MEMBER', 'other-org OWNER', 'revoked key'] as const;

/** The figures of the row, named once here; FIGURE_ORDER keeps the row's order whichever case reports first. */
export const FIGURE = {
  ownerTools: 'tools in the OWNER tools/list',
  memberTools: 'tools in the MEMBER tools/list',
  caller: (name: string) => `${name}: calls refused / empty read / other read`,
  leaked: 'answers holding a victim id, secret or content',
  changed: 'calls after which any table changed',
  writesNotRefused: 'write tools not refused',
  control: "control: read tools where the victim's own key sees its data",
  linesKey:
    "LINES key (one line) on its own user's endpoints: not found / refused / answered, for the endpoint scoped to all lines; its line; another line; both",
  readOnlyKey: "victim's read-only key (issue 16): tools listed / tools needing send or webhooks / calls refused for the permission, of calls",
  asUnknownId: "hidden-endpoint answers identical to an unknown id's",
  eventsAfter: "events after the attempts: at the hidden endpoints' own URLs (all lines, another line, both) / at URLs the key tried to set",
  leftOut: 'left out',
  accessEnded:
    'issue 30, access ended (membership removed / line deleted): delivery tools and webhook pages: calls, answers or requests holding the lost line, answers as an unknown id (get, resend, page, web resend), requests at the new URL',
  agentRoutes:
    'issue 30, the agent REST routes: keys without send refused (403, nothing changed) / keys with send that acted / foreign callers answered 404 or 401 with nothing leaked or changed',
  oauthTools:
    'issue 31, OAuth access tokens with one line and Read only × every tool: calls / answered (in its tools/list) / refused for the permission / answers holding what the token may not reach / calls after which a table changed',
  oauthRoutes: 'issue 31, OAuth access tokens on the agent REST routes: refused 401 with nothing changed',
  oauthEndpoints:
    'OAuth endpoints without credentials (never-approved document URLs at token and revocation, bad bodies, registrations past the bounds): requests / answered with their own OAuth error / 5xx / documents fetched by token and revocation / distinct public authorization pages for 4 failing client_ids / a table changed',
  inboxPages:
    "issue 34, the inbox pages (Conversations, a thread, Approvals, a download, the live stream) × callers who may not see line A: calls, leaks, victim ids answered as an unknown id, calls after which the victim's rows changed, stream frames of line A",
  events:
    "issue 43, MCP Events (events/poll, events/stream, events/subscribe in both eras; GET /api/events) × callers outside line A: surfaces holding line A's event, of surfaces, per caller; control: the victim's own key; calls without webhooks refused with -32012 (the feed: 403, 401 for a grant)",
  eras: 'every tool call (and tools/list) of the cases also made as a 2026-07-28 request (envelope, mirrored headers): calls repeated / refused alike / answered alike / answers that differed; answered writes not repeated',
};
const FIGURE_ORDER = [
  FIGURE.ownerTools,
  FIGURE.memberTools,
  ...CALLERS.map(FIGURE.caller),
  FIGURE.leaked,
  FIGURE.changed,
  FIGURE.writesNotRefused,
  FIGURE.control,
  FIGURE.linesKey,
  FIGURE.readOnlyKey,
  FIGURE.asUnknownId,
  FIGURE.eventsAfter,
  FIGURE.leftOut,
  FIGURE.accessEnded,
  FIGURE.agentRoutes,
  FIGURE.oauthTools,
  FIGURE.oauthRoutes,
  FIGURE.oauthEndpoints,
  FIGURE.inboxPages,
  FIGURE.events,
  FIGURE.eras,
];

/**
 * The one row of docs/RELIABILITY.md the cases share ("authz-matrix"), the same row the single
 * test wrote before it was split: figures in a fixed order, the bad inputs and notes of each case
 * in case order, passed when every case passed. Recorded only when every case ran; a run of some
 * cases (`-t`) prints what they found and leaves the document's row as it was.
 */
export class MatrixReport implements EraTally {
  private readonly result = new ResultBuilder('authz-matrix', 'Authorization matrix: every tool × foreign ids, LINES key, MEMBER, revoked key');
  private readonly ran = new Set<MatrixCase>();
  private readonly passed = new Set<MatrixCase>();
  private readonly inputs = new Map<MatrixCase, string>();
  private readonly notes = new Map<MatrixCase, string[]>();
  /** The problems of the three cases on the victim's data, counted together in the LEAKED / CHANGED / write figures. */
  private readonly victimProblems: string[] = [];
  private readonly eras = { repeated: 0, refused: 0, answered: 0, differed: 0, notRepeated: 0 };

  /** Runs one case: it passed if `body` returns (its expectations held). */
  async run(name: MatrixCase, body: () => Promise<void>): Promise<void> {
    this.ran.add(name);
    await body();
    this.passed.add(name);
  }

  figure(name: string, value: string | number): void {
    if (!FIGURE_ORDER.includes(name)) throw new Error(`figure "${name}" is not in FIGURE_ORDER`);
    this.result.figure(name, value);
  }

  /** What bad inputs the case tried, for the row's "Bad inputs tried" cell. */
  badInputs(name: MatrixCase, text: string): void {
    this.inputs.set(name, text);
  }

  note(name: MatrixCase, ...notes: string[]): void {
    this.notes.set(name, [...(this.notes.get(name) ?? []), ...notes]);
  }

  /** A case on the victim's data reports its problems: the totals over the three cases are figures. */
  victimCaseProblems(problems: string[]): void {
    this.victimProblems.push(...problems);
    const count = (word: string) => String(this.victimProblems.filter((p) => p.includes(word)).length);
    this.result.figure(FIGURE.leaked, count('LEAKED'));
    this.result.figure(FIGURE.changed, count('CHANGED'));
    this.result.figure(FIGURE.writesNotRefused, count('write tool'));
  }

  /** A call the cases made in both eras (matrix.ts, callInBothEras): the eras figure; a difference is the case's problem to report. */
  eraCall(outcome: EraOutcome): void {
    const e = this.eras;
    if (!outcome.repeated) e.notRepeated += 1;
    else if (outcome.differs) e.differed += 1;
    else if (outcome.refused) e.refused += 1;
    else e.answered += 1;
    if (outcome.repeated) e.repeated += 1;
    this.result.figure(FIGURE.eras, `${e.repeated} / ${e.refused} / ${e.answered} / ${e.differed}; ${e.notRepeated}`);
  }

  /** After every case: records the row when every case ran, else only prints what ran. */
  finish(): void {
    const result = this.result;
    result.figures.sort((a, b) => FIGURE_ORDER.indexOf(a[0]) - FIGURE_ORDER.indexOf(b[0]));
    result.load = '—';
    result.faults = '—';
    result.lost = null;
    result.duplicates = '—';
    result.badInputs = CASES.flatMap((c) => this.inputs.get(c) ?? []).join('; ') || '—';
    result.notes.push(...this.victimProblems.slice(0, 10), ...CASES.flatMap((c) => this.notes.get(c) ?? []));
    result.passed = CASES.every((c) => this.passed.has(c));
    if (this.ran.size === CASES.length) {
      result.record();
      return;
    }
    const figures = result.figures.map(([name, value]) => `  ${name}: ${value}`).join('\n');
    process.stdout.write(
      `\n=== ${result.title}: ${this.ran.size} of ${CASES.length} cases ran (${[...this.ran].join(', ')}), ` +
        `${this.passed.size} passed; docs/RELIABILITY.md keeps its row (run every case to update it)\n${figures}\n`,
    );
  }
}

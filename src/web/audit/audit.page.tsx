import { AuditEventView, AuditPage as AuditPageData } from '../../audit/audit-events.service';
import { Person } from '../../identity/principal';
import { Layout } from '../components/layout';
import { Notice } from '../components/notice';
import { Time } from '../components/time';

export const AUDIT_PATH = '/settings/audit';

/** The filters as the GET form gave them (re-filled in the form). */
export interface AuditQuery {
  credentialId: string;
  since: string;
  until: string;
  cursor?: string;
}

const SURFACE_TEXT: Record<AuditEventView['surface'], string> = { mcp: 'MCP', rest: 'REST API', web: 'Web page', admin: 'Admin API' };
const OUTCOME_TEXT: Record<AuditEventView['outcome'], string> = { ok: 'Done', refused: 'Refused', failed: 'Failed' };

/** Settings → Audit trail: what every API key, connected app, person and the operator changed in the org, newest first. */
export function AuditTrailPage(props: {
  person: Person;
  query: AuditQuery;
  data: Omit<AuditPageData, 'events' | 'nextCursor'> & Partial<AuditPageData>;
  error?: { field?: string; message: string };
}) {
  const { person, query, data } = props;
  const events = data.events ?? [];
  const filtered = !!(query.credentialId || query.since || query.until || query.cursor);
  return (
    <Layout title="Audit trail" person={person} current={AUDIT_PATH}>
      <p class="muted">
        Every change made in your organization through an API key, a connected app, these pages or the operator's admin API, newest first: who made it, what it
        was, what it concerned and how it ended. Reads are not listed. Times are shown in your time zone.
      </p>
      <Filters query={query} credentials={data.credentials} errorField={props.error?.field} />
      <Notice error={props.error?.message} />
      {events.length === 0 ? (
        <p>{filtered ? 'No changes match these filters.' : 'No changes recorded yet.'}</p>
      ) : (
        <div class="table-scroll">
          <table class="data audit">
            <caption class="visually-hidden">Changes, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Concerning</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {events.map((event) => (
                <tr key={event.id}>
                  <th scope="row">
                    <Time at={event.at} />
                  </th>
                  <td data-label="Who">
                    <Who event={event} data={data} />
                  </td>
                  <td data-label="Action">
                    <code>{event.action}</code>
                    <br />
                    <span class="muted">{SURFACE_TEXT[event.surface]}</span>
                  </td>
                  <td data-label="Concerning">
                    <Targets targets={event.targets} />
                  </td>
                  <td data-label="Outcome">
                    {OUTCOME_TEXT[event.outcome]}
                    {event.errorCode ? <span class="muted">{` ${event.errorCode}`}</span> : null}
                    {event.detail ? (
                      <>
                        <br />
                        <span class="muted">{event.detail}</span>
                      </>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data.nextCursor ? (
        <p class="pager">
          <a href={olderHref(query, data.nextCursor)} rel="next">
            Older
          </a>
        </p>
      ) : null}
    </Layout>
  );
}

function Filters(props: { query: AuditQuery; credentials: AuditPageData['credentials']; errorField?: string }) {
  const { query } = props;
  const invalid = (field: string) => (props.errorField === field ? 'true' : undefined);
  return (
    <form method="get" action={AUDIT_PATH} class="inline-form filter-form" aria-label="Filter the audit trail">
      <div class="field">
        <label for="credentialId">API key or app</label>
        <select id="credentialId" name="credentialId" aria-invalid={invalid('credentialId')}>
          <option value="">All, and people</option>
          {props.credentials.map((c) => (
            <option key={c.id} value={c.id} selected={query.credentialId === c.id}>
              {`${c.name} (${c.kind === 'api_key' ? 'API key' : 'app'})`}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="since">From (UTC)</label>
        <input id="since" name="since" type="date" value={query.since} aria-invalid={invalid('since')} />
      </div>
      <div class="field">
        <label for="until">To (UTC)</label>
        <input id="until" name="until" type="date" value={query.until} aria-invalid={invalid('until')} />
      </div>
      <button type="submit" class="secondary">
        Filter
      </button>
    </form>
  );
}

/** Who acted: the credential (by its name while it exists) for its person, the person on a page, or the operator. */
function Who(props: { event: AuditEventView; data: Pick<AuditPageData, 'credentials' | 'people'> }) {
  const { event, data } = props;
  if (event.actorKind === 'admin') return <>Operator (admin API)</>;
  const person = data.people.find((p) => p.id === event.userId)?.displayName ?? 'A former member';
  if (event.credentialId === null) return <>{person}</>;
  const credential = data.credentials.find((c) => c.id === event.credentialId);
  const kind = event.actorKind === 'api_key' ? 'API key' : 'App';
  return (
    <>
      {credential ? `${kind} “${credential.name}”` : `${kind} (revoked)`}
      <br />
      <span class="muted">for {person}</span>
    </>
  );
}

/** The ids a change concerned, by what they are (`thread`, `message`...). */
function Targets(props: { targets: AuditEventView['targets'] }) {
  const entries = Object.entries(props.targets);
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="plain audit-targets">
      {entries.map(([name, ids]) => (
        <li key={name}>
          <span class="muted">{name.replace(/Id$/, '')}</span> <code>{[ids].flat().join(', ')}</code>
        </li>
      ))}
    </ul>
  );
}

function olderHref(query: AuditQuery, cursor: string): string {
  const params = new URLSearchParams();
  if (query.credentialId) params.set('credentialId', query.credentialId);
  if (query.since) params.set('since', query.since);
  if (query.until) params.set('until', query.until);
  params.set('cursor', cursor);
  return `${AUDIT_PATH}?${params.toString()}`;
}

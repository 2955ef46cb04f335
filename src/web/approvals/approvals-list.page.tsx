import { Person } from '../../identity/principal';
import { Notice } from '../components/notice';
import { Layout } from '../components/layout';
import { Draft, DraftActions, DraftContext, conversationHref } from './draft-parts';

const CURRENT = '/approvals';

/** The Approvals page: drafts waiting for a human, oldest first, each with its thread and the three actions. */
export function ApprovalsPage(props: { person: Person; drafts: Draft[]; nextCursor: string | null; paged: boolean; notice?: string }) {
  const { person } = props;
  return (
    <Layout title="Approvals" person={person} current={CURRENT}>
      <Notice notice={props.notice} />
      <p>
        Replies drafted by agents in DRAFT mode on your lines wait here, the one waiting longest first. Approve sends the draft as written, Edit and approve
        sends your version instead, Reject sends nothing.
      </p>
      {/* Live: new drafts appear and decided ones leave without a reload (docs/web.md, "Live updates"). */}
      <section id="live-approvals" data-live="approvals" aria-label="Drafts">
        {props.drafts.length === 0 ? (
          <p class="notice">{props.paged ? 'No more drafts are waiting.' : 'No drafts are waiting for approval.'}</p>
        ) : (
          <ol class="approvals" aria-label="Drafts waiting for approval">
            {props.drafts.map((draft) => (
              <li key={draft.turn.id}>
                <article class="approval" aria-labelledby={`draft-${draft.turn.id}-title`}>
                  <DraftContext draft={draft} headingLevel="h2" />
                  <h3>Draft reply</h3>
                  <div class="approval-draft draft-text" tabindex={0} role="region" aria-label={`Draft reply to ${draft.partner}`}>
                    {draft.turn.body}
                  </div>
                  <DraftActions person={person} turnId={draft.turn.id} describedBy={`draft-${draft.turn.id}-title`}>
                    <a href={conversationHref(draft.turn.threadId)}>
                      Open the conversation<span class="visually-hidden"> with {draft.partner}</span>
                    </a>
                  </DraftActions>
                </article>
              </li>
            ))}
          </ol>
        )}
        {props.paged || props.nextCursor ? (
          <nav class="pager" aria-label="More drafts">
            {props.paged ? <a href={CURRENT}>Oldest drafts</a> : null}
            {props.nextCursor ? <a href={`${CURRENT}?cursor=${encodeURIComponent(props.nextCursor)}`}>Newer drafts</a> : null}
          </nav>
        ) : null}
      </section>
    </Layout>
  );
}

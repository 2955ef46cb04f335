import { GrantView } from '../../oauth/oauth.service';

/** How the app's identity was established, shown under its name (a column of its own would push Revoke out of a desktop's view). */
export const REGISTRATION_TEXT: Record<GrantView['client']['registration'], string> = {
  'self-registered': 'Self-registered',
  'metadata-document': 'Metadata document',
};

/** The name the client gave itself, or its client id when it gave none. */
export function clientName(grant: GrantView): string {
  return grant.client.name ?? grant.client.id;
}

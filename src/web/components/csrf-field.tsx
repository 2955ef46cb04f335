import { Person } from '../../identity/principal';

/** The hidden `_csrf` field every form of a signed-in page carries (checked by identity/csrf-token.guard.ts). */
export function CsrfField(props: { person: Person }) {
  return <input type="hidden" name="_csrf" value={props.person.csrfToken} />;
}

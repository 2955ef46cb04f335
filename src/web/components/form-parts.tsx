import type { ComponentChildren } from 'preact';
import { Person } from '../../identity/principal';
import { CsrfField } from './csrf-field';

/** A field's error, under it; the field names it in aria-describedby (`<id>`). Nothing when there is none. */
export function FieldError(props: { id: string; error?: string }) {
  return props.error ? (
    <p class="field-error" id={props.id}>
      {props.error}
    </p>
  ) : null;
}

/** The form of a confirmation page: one dangerous button that posts (with the CSRF token) and a Cancel link. */
export function ConfirmForm(props: { person: Person; action: string; cancel: string; children: ComponentChildren }) {
  return (
    <form method="post" action={props.action} class="actions">
      <CsrfField person={props.person} />
      <button type="submit" class="danger">
        {props.children}
      </button>
      <a href={props.cancel}>Cancel</a>
    </form>
  );
}

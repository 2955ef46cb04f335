import type { ComponentChildren } from 'preact';

/**
 * The one notice banner of every page, above its content: what went through (`notice`, a success
 * with role status: the sentence of a screen's notice table, kit/notices.ts, or a sentence of the
 * page's own) and/or what was refused (`error`, role alert). Nothing for what is not given.
 */
export function Notice(props: { notice?: ComponentChildren; error?: ComponentChildren }) {
  return (
    <>
      {props.notice ? (
        <p class="notice success" role="status">
          {props.notice}
        </p>
      ) : null}
      {props.error ? (
        <p class="notice error" role="alert">
          {props.error}
        </p>
      ) : null}
    </>
  );
}

import { PublicLayout } from './layout';

/** Any other refusal or failure of a page request. */
export function ErrorPage(props: { title: string; message: string }) {
  return (
    <PublicLayout title={props.title}>
      <p>{asSentence(props.message)}</p>
      <p>
        <a href="/">Back to the start</a>
      </p>
    </PublicLayout>
  );
}

/** The service's messages are written for APIs (`the form is missing ...`); on a page, a sentence. */
function asSentence(message: string): string {
  const text = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

import { Response } from 'express';
import type { VNode } from 'preact';
import { seeOther, sendPage } from './render';
import { FieldTable, Refusal, refusalOf } from './refusal';

/** Page forms are small: an email address or a token, and the CSRF field. */
export const FORM_LIMIT = 8 * 1024;

/** What an action that went through answers: a redirect (303, with its notice in the address), or a page (a secret shown once). */
export type Outcome = { redirect: string } | { status: number; page: VNode };

/**
 * One form action of a page (docs/web.md): `read` the posted form as typed, `run` the action
 * (the service call, with the feature's own argument checks), then answer its outcome; a refusal
 * of the form (refusalOf: the one error table) is the form again, with what was typed and the
 * refusal next to its field, under the refusal's status; any other error goes on to the error
 * page (PageErrorFilter).
 *
 *   await formAction(response, {
 *     read: () => readEndpointForm(body),
 *     run: async (form) => { await this.webhooks.update(...); return { redirect: withNotice(path, 'saved') }; },
 *     fields: ENDPOINT_FIELDS,
 *     again: (form, refusal) => <EditEndpointPage form={form} errors={{ [refusal.field ?? 'form']: refusal.message }} />,
 *   });
 */
export async function formAction<T, F extends string>(
  response: Response,
  action: {
    read: () => T;
    run: (input: T) => Promise<Outcome>;
    fields: FieldTable<F>;
    again: (input: T, refusal: Refusal<F>) => VNode | Promise<VNode>;
  },
): Promise<void> {
  const input = action.read();
  let outcome: Outcome;
  try {
    outcome = await action.run(input);
  } catch (error) {
    const refusal = refusalOf(error, action.fields);
    return sendPage(response, refusal.status, await action.again(input, refusal));
  }
  if ('redirect' in outcome) seeOther(response, outcome.redirect);
  else sendPage(response, outcome.status, outcome.page);
}

import { Body, Controller, Get, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { UnprocessableError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { MailServerRole } from '../../channels/email/mailboxes/mail-servers';
import { readMailboxSettings } from '../../channels/email/mailboxes/mailbox-settings.dto';
import { MailboxesService } from '../../channels/email/mailboxes/mailboxes.service';
import { DisconnectMailboxPage } from './mailbox-disconnect.page';
import { fieldMessage, MAILBOX_FIELDS, MailboxErrors, MailboxField, MailboxForm, MailboxFormPage, formOf } from './mailbox-form.page';
import { MailboxesPage } from './mailboxes-list.page';
import { NOTICES } from './mailboxes.notices';
import { FORM_LIMIT, formAction } from '../kit/form-action';
import { NOTICE_KEY, noticeText, withNotice } from '../kit/notices';
import { PathId } from '../kit/path-id';
import { FieldTable } from '../kit/refusal';
import { PageErrorFilter } from '../kit/page-error.filter';
import { seeOther, sendPage } from '../kit/render';

/**
 * The connect form holds two passwords of up to 1,024 characters, which a browser sends
 * percent-encoded: up to 9 bytes a character (a 3-byte UTF-8 character, each byte as %XX).
 */
const CONNECT_FORM_LIMIT = 32 * 1024;

type Form = Record<string, string | undefined> | undefined;
const BASE = '/settings/mailboxes';
/**
 * The form's fields as the service's refusals name them; a failed login names its server (`imap`,
 * `smtp`) and is told above the form.
 */
const FIELDS: FieldTable<MailboxField | 'form'> = {
  fields: { ...Object.fromEntries(MAILBOX_FIELDS.map((f) => [f, f])), imap: 'form', smtp: 'form' },
};

/**
 * Settings → Mailboxes (docs/web.md): an OWNER or ADMIN connects the org's email account lines to
 * their mailboxes, changes and disconnects them. Every rule is MailboxesService's (who may, which
 * lines, the address policy, the verified logins) and the form is checked by the feature's rules
 * for the settings, the admin API's body rules (readMailboxSettings): nothing is decided here. A
 * refusal is shown next to its field (400), a failed login as a sentence above the form (422).
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('settings/mailboxes')
export class MailboxesController {
  constructor(private readonly mailboxes: MailboxesService) {}

  @Get()
  async list(@CurrentPrincipal() person: Person, @Query(NOTICE_KEY) done: unknown, @Res() response: Response): Promise<void> {
    const accounts = await this.mailboxes.listFor(person);
    sendPage(response, 200, <MailboxesPage person={person} accounts={accounts} notice={noticeText(NOTICES, done)} />);
  }

  @Get(':lineId')
  async form(@CurrentPrincipal() person: Person, @PathId('lineId') lineId: string, @Res() response: Response): Promise<void> {
    const account = await this.mailboxes.getFor(person, lineId);
    sendPage(response, 200, <MailboxFormPage person={person} account={account} form={formOf(account)} errors={{}} />);
  }

  /** Connects (or changes) the mailbox once both logins work; the form comes back without its passwords after a refusal. */
  @ReadsBody({ as: 'form', limit: CONNECT_FORM_LIMIT })
  @Post(':lineId')
  async connect(@CurrentPrincipal() person: Person, @PathId('lineId') lineId: string, @Body() body: Form, @Res() response: Response): Promise<void> {
    const account = await this.mailboxes.getFor(person, lineId);
    const page = (form: MailboxForm, errors: MailboxErrors, failure?: UnprocessableError) => (
      <MailboxFormPage person={person} account={account} form={form} errors={errors} failure={failure} />
    );
    // The feature's rules for the settings (every broken one at once, each next to its field) before the service's.
    const judged = await readMailboxSettings(settingsOf(body));
    if ('problems' in judged) return sendPage(response, 400, page(readForm(body), errorsOf(judged.problems)));
    await formAction(response, {
      read: () => readForm(body),
      run: async () => {
        await this.mailboxes.connectFor(person, lineId, judged.value);
        return { redirect: withNotice(BASE, 'connected') };
      },
      fields: FIELDS,
      again: (form, refusal) =>
        refusal.error instanceof UnprocessableError
          ? page(form, {}, refusal.error)
          : page(form, errorsOf([{ field: refusal.field ?? 'form', message: refusal.message }])),
    });
  }

  @Get(':lineId/disconnect')
  async disconnectForm(@CurrentPrincipal() person: Person, @PathId('lineId') lineId: string, @Res() response: Response): Promise<void> {
    const account = await this.mailboxes.getFor(person, lineId);
    if (!account.mailbox) return seeOther(response, BASE);
    sendPage(response, 200, <DisconnectMailboxPage person={person} account={account} />);
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post(':lineId/disconnect')
  async disconnect(@CurrentPrincipal() person: Person, @PathId('lineId') lineId: string, @Res() response: Response): Promise<void> {
    await this.mailboxes.disconnectFor(person, lineId);
    seeOther(response, withNotice(BASE, 'disconnected'));
  }
}

/** The form as typed, to fill in again: never the passwords. */
function readForm(body: Form): MailboxForm {
  const server = (role: MailServerRole) => ({
    host: body?.[`${role}.host`] ?? '',
    port: body?.[`${role}.port`] ?? '',
    tls: body?.[`${role}.tls`] ?? '',
    username: body?.[`${role}.username`] ?? '',
  });
  return { imap: server('imap'), smtp: server('smtp') };
}

/** The form as the admin API's body (`{imap: {host, port, ...}, smtp: {...}}`), for the feature's rules and the service to judge. */
function settingsOf(body: Form) {
  const server = (role: MailServerRole) => {
    const port = (body?.[`${role}.port`] ?? '').trim();
    return {
      host: (body?.[`${role}.host`] ?? '').trim(),
      // A number when it is one; anything else is passed on for the rules to refuse.
      port: /^\d{1,9}$/.test(port) ? Number(port) : port,
      tls: body?.[`${role}.tls`] ?? '',
      username: (body?.[`${role}.username`] ?? '').trim(),
      password: body?.[`${role}.password`] ?? '',
    };
  };
  return { imap: server('imap'), smtp: server('smtp') };
}

function isFormField(field: string | undefined): field is MailboxField {
  return MAILBOX_FIELDS.includes(field as MailboxField);
}

/**
 * One problem a field, next to it; a problem with no field of the form is about the form as a
 * whole. class-validator lists a field's broken rules last-declared first, so the last one listed
 * is the first rule of the DTO (the type: "must be an integer number" rather than "must not be
 * greater than 65535" for `abc`).
 */
function errorsOf(problems: Array<{ field: string; message: string }>): MailboxErrors {
  const errors: MailboxErrors = {};
  for (const { field, message } of problems) {
    if (isFormField(field)) errors[field] = fieldMessage(field, message);
    else errors.form ??= message;
  }
  return errors;
}

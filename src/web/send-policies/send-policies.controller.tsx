import { Body, Controller, Get, Param, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { NotFoundError } from '../../common/errors';
import { ReadsBody } from '../../common/request-body';
import { isUuid } from '../../common/uuid';
import { SendPoliciesService } from '../../send-policies/send-policies.service';
import { FORM_LIMIT, formAction } from '../kit/form-action';
import { NOTICE_KEY, noticeText, withNotice } from '../kit/notices';
import { FieldTable } from '../kit/refusal';
import { PageErrorFilter } from '../kit/page-error.filter';
import { seeOther, sendPage } from '../kit/render';
import { POLICY_FORM_FIELDS, PolicyField, PolicyForm, policyFormOf, policyOfForm, readPolicyForm } from './policy-form';
import { BASE, SendPoliciesPage } from './send-policies.page';
import { NOTICES } from './send-policies.notices';
import { SendPolicyOverridePage } from './send-policy-override.page';

type Posted = Record<string, string | undefined> | undefined;

/** A refusal names a policy field (shown next to it); any other above the form. */
const FIELDS: FieldTable<PolicyField> = { fields: POLICY_FORM_FIELDS, unlisted: 'whole' };

/**
 * Settings → Send policies (docs/send-policies.md): the org's policy and each credential's
 * override. Every member sees them (read-only; a MEMBER only their own credentials' overrides, see
 * SendPoliciesService.overviewFor); only the OWNER changes them
 * (SendPoliciesService.assertMayEdit: a POST by anyone else is the 403 page). The rules and the
 * checks of the values are the service's; this turns forms into its calls.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('settings/send-policies')
export class SendPoliciesController {
  constructor(private readonly policies: SendPoliciesService) {}

  @Get()
  async show(@CurrentPrincipal() person: Person, @Query(NOTICE_KEY) done: unknown, @Res() response: Response): Promise<void> {
    const overview = await this.policies.overviewFor(person);
    sendPage(
      response,
      200,
      <SendPoliciesPage
        person={person}
        overview={overview}
        form={policyFormOf(overview.policy)}
        errors={{}}
        mayEdit={person.role === 'OWNER'}
        notice={noticeText(NOTICES, done)}
      />,
    );
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post()
  async save(@CurrentPrincipal() person: Person, @Body() body: Posted, @Res() response: Response): Promise<void> {
    this.policies.assertMayEdit(person);
    await formAction(response, {
      read: () => readPolicyForm(body),
      run: async (form) => {
        await this.policies.setOrgPolicy(person.orgId, policyOfForm(form, false));
        return { redirect: withNotice(BASE, 'saved') };
      },
      fields: FIELDS,
      again: async (form: PolicyForm, refusal) => (
        <SendPoliciesPage
          person={person}
          overview={await this.policies.overview(person.orgId)}
          form={form}
          errors={{ [refusal.field ?? 'form']: refusal.message }}
          mayEdit
        />
      ),
    });
  }

  @Get('credentials/:credentialId')
  async showOverride(@CurrentPrincipal() person: Person, @Param('credentialId') credentialId: string, @Res() response: Response): Promise<void> {
    const view = await this.policies.overrideFor(person, known(credentialId));
    sendPage(
      response,
      200,
      <SendPolicyOverridePage person={person} view={view} form={policyFormOf(view.override)} errors={{}} mayEdit={person.role === 'OWNER'} />,
    );
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post('credentials/:credentialId')
  async saveOverride(
    @CurrentPrincipal() person: Person,
    @Param('credentialId') credentialId: string,
    @Body() body: Posted,
    @Res() response: Response,
  ): Promise<void> {
    this.policies.assertMayEdit(person);
    const id = known(credentialId);
    await formAction(response, {
      read: () => readPolicyForm(body),
      run: async (form) => {
        await this.policies.setOverride(person.orgId, id, policyOfForm(form, true));
        return { redirect: withNotice(BASE, 'override') };
      },
      fields: FIELDS,
      again: async (form: PolicyForm, refusal) => (
        <SendPolicyOverridePage
          person={person}
          view={await this.policies.override(person.orgId, id)}
          form={form}
          errors={{ [refusal.field ?? 'form']: refusal.message }}
          mayEdit
        />
      ),
    });
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post('credentials/:credentialId/remove')
  async removeOverride(@CurrentPrincipal() person: Person, @Param('credentialId') credentialId: string, @Res() response: Response): Promise<void> {
    this.policies.assertMayEdit(person);
    await this.policies.removeOverride(person.orgId, known(credentialId));
    seeOther(response, withNotice(BASE, 'removed'));
  }
}

/** A credential id of the path: a malformed one is no credential (404), as an unknown one. */
function known(credentialId: string): string {
  if (!isUuid(credentialId)) throw new NotFoundError(`no API key or OAuth grant ${String(credentialId).slice(0, 64)} in this org`, 'credentialId');
  return credentialId.toLowerCase();
}

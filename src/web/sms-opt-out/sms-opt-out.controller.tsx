import { Body, Controller, Get, Post, Query, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { CurrentPrincipal, SessionAuth } from '../../identity/auth.decorators';
import { Person } from '../../identity/principal';
import { ReadsBody } from '../../common/request-body';
import { OptOutsService } from '../../opt-outs/opt-outs.service';
import { FORM_LIMIT, formAction } from '../kit/form-action';
import { NOTICE_KEY, NoticeTable, noticeText, withNotice } from '../kit/notices';
import { PageErrorFilter } from '../kit/page-error.filter';
import { sendPage } from '../kit/render';
import { BASE, SmsOptOutPage } from './sms-opt-out.page';

const NOTICES = { saved: 'The HELP text is saved: the next HELP is answered with it.' } as const satisfies NoticeTable;

/** Settings → SMS opt-out (docs/web.md): the org's HELP text; OptOutsService decides who may change it and what it may be. */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('settings/sms-opt-out')
export class SmsOptOutController {
  constructor(private readonly optOuts: OptOutsService) {}

  @Get()
  async show(@CurrentPrincipal() person: Person, @Query(NOTICE_KEY) done: unknown, @Res() response: Response): Promise<void> {
    const help = await this.optOuts.helpText(person.orgId);
    sendPage(response, 200, <SmsOptOutPage person={person} help={help} notice={noticeText(NOTICES, done)} />);
  }

  @ReadsBody({ as: 'form', limit: FORM_LIMIT })
  @Post()
  async save(@CurrentPrincipal() person: Person, @Body() body: Record<string, string | undefined> | undefined, @Res() response: Response): Promise<void> {
    await formAction(response, {
      read: () => body?.helpText ?? '',
      run: async (text) => {
        await this.optOuts.setHelpTextAs(person, text);
        return { redirect: withNotice(BASE, 'saved') };
      },
      fields: { fields: { helpText: 'helpText' } },
      again: async (text, refusal) => <SmsOptOutPage person={person} help={await this.optOuts.helpText(person.orgId)} form={text} error={refusal.message} />,
    });
  }
}

import { Controller, Get, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { SessionAuth } from '../../identity/auth.decorators';
import { NotFoundError } from '../../common/errors';
import { PageErrorFilter } from '../kit/page-error.filter';
import { seeOther } from '../kit/render';

/**
 * What the other page controllers do not answer under /settings: `/settings` itself leads to the
 * first settings page, and any other path is the 404 page (signed out: the sign-in page first),
 * not the API's JSON 404. Registered after every page controller (PAGE_CONTROLLERS), so it only
 * gets what no page route matched.
 */
@ApiExcludeController()
@UseFilters(PageErrorFilter)
@SessionAuth()
@Controller('settings')
export class SettingsFallbackController {
  @Get()
  index(@Res() response: Response): void {
    seeOther(response, '/settings/api-keys');
  }

  @Get('*path')
  notFound(): never {
    throw new NotFoundError('There is no such settings page. Check the address, or start again from the link below.');
  }
}

import { Controller, Get, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Response } from 'express';
import { Public } from '../../identity/auth.decorators';
import { APP_CSS } from './assets';
import { browserScript } from './browser-script';

/** The web app's stylesheet and script; public (the sign-in pages use them too), cached for an hour. */
@ApiExcludeController()
@Public()
@Controller('static')
export class StaticController {
  @Get('app.css')
  css(@Res() response: Response): void {
    response.setHeader('Cache-Control', 'public, max-age=3600');
    response.type('text/css; charset=utf-8').send(APP_CSS);
  }

  @Get('app.js')
  js(@Res() response: Response): void {
    response.setHeader('Cache-Control', 'public, max-age=3600');
    response.type('text/javascript; charset=utf-8').send(browserScript());
  }
}

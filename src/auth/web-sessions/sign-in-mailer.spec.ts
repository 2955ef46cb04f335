import { Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { ServiceMailer } from '../../common/service-mailer';
import { SignInMailer } from './sign-in-mailer';

describe('SignInMailer without SMTP_URL', () => {
  const url = 'http://localhost:3000/sign-in/link?token=sil_x';
  const mailer = (isDevelopment: boolean) =>
    new SignInMailer(new ServiceMailer({ smtpUrl: null, isDevelopment, publicBaseUrl: 'http://localhost:3000' } as AppConfig));

  afterEach(() => jest.restoreAllMocks());

  it('logs the link in development', async () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    await mailer(true).send('pat@example.com', url, new Date());
    expect(log.mock.calls.map((c) => String(c[0]))).toEqual([expect.stringContaining(url)]);
  });

  it('never logs it in production', async () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    await mailer(false).send('pat@example.com', url, new Date());
    expect(log).not.toHaveBeenCalled();
    expect(warn.mock.calls.map((c) => String(c[0]))).toEqual(['an email (Your sign-in link) was not sent: SMTP_URL is not set']);
  });
});

import { Logger } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { DevelopmentSmsGateway, HttpSmsGateway, NoSmsGateway, SmsGateway, smsGatewayProvider } from './sms-gateways';
import { SmsMessagesRepository } from './sms-messages.repository';

type Factory = (config: AppConfig, messages: SmsMessagesRepository) => SmsGateway;
const factory = (smsGatewayProvider as unknown as { useFactory: Factory }).useFactory;

describe('the SMS gateway chosen at start', () => {
  const held: unknown[][] = [];
  const messages = { holdReport: (...args: unknown[]) => Promise.resolve(void held.push(args)) } as unknown as SmsMessagesRepository;
  const config = (smsCarrierUrl: string | null, isDevelopment: boolean) => ({ smsCarrierUrl, isDevelopment }) as AppConfig;

  afterEach(() => jest.restoreAllMocks());

  it('is the HTTP carrier whenever SMS_CARRIER_URL is set, in development too', () => {
    expect(factory(config('http://127.0.0.1:9/sms', true), messages)).toBeInstanceOf(HttpSmsGateway);
    expect(factory(config('https://carrier.example/sms', false), messages)).toBeInstanceOf(HttpSmsGateway);
  });

  it('in development without it: the development carrier takes the SMS, logs one line, and holds a DELIVERED report', async () => {
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const gateway = factory(config(null, true), messages);
    expect(gateway).toBeInstanceOf(DevelopmentSmsGateway);
    const sms = { messageId: 'm-1', lineId: 'line-1', from: '+15551230001', to: '+14155550123', body: 'Your table\nis ready.' };
    const accepted = await gateway.send(sms);
    expect(accepted).toEqual({ providerMessageId: expect.stringMatching(/^dev-/), reportsDelivery: true });
    expect(held).toEqual([['line-1', accepted.providerMessageId, 'DELIVERED', null]]);
    expect(log.mock.calls.map((c) => String(c[0]))).toEqual([
      'SMS m-1 from +15551230001 to +14155550123 accepted by the development carrier (no SMS_CARRIER_URL): "Your table is ready."',
    ]);
  });

  it('in production without it: one warning at start, and every SMS refused with the reason, not retried', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const gateway = factory(config(null, false), messages);
    expect(gateway).toBeInstanceOf(NoSmsGateway);
    expect(warn).toHaveBeenCalledTimes(1);
    await expect(gateway.send({ messageId: 'm', lineId: 'l', from: '+1', to: '+2', body: 'x' })).rejects.toMatchObject({
      message: 'no SMS carrier is configured (SMS_CARRIER_URL)',
      retryable: false,
    });
  });
});

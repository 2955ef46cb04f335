import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminOnly } from '../identity/auth.decorators';
import { UuidParam } from '../common/uuid-param';
import { SmsProvidersService } from '../channels/sms/sms-providers.service';
import { ConnectSmsProviderDto } from './dto/admin.dto';

@ApiTags('admin: SMS providers')
@ApiBearerAuth()
@AdminOnly()
@Controller('admin/lines/:lineId/sms-provider')
export class AdminSmsProvidersController {
  constructor(private readonly providers: SmsProvidersService) {}

  @Put()
  @ApiOperation({
    summary: 'Connects a phone number line to its Twilio (or Twilio-compatible) account, or replaces the connection',
    description:
      'The provider must accept the Account SID and auth token before anything is saved (422 names accountSid or authToken). ' +
      'The auth token is sealed and never returned. The answer gives the URLs to set in the console.',
  })
  connect(@Param('lineId', UuidParam('lineId')) lineId: string, @Body() body: ConnectSmsProviderDto) {
    return this.providers.connect(lineId, body);
  }

  @Get()
  @ApiOperation({ summary: "The line's SMS provider account, without its auth token" })
  get(@Param('lineId', UuidParam('lineId')) lineId: string) {
    return this.providers.get(lineId);
  }

  @Delete()
  @HttpCode(204)
  @ApiOperation({ summary: 'Disconnects the provider: the stored auth token is deleted, and the line sends through SMS_CARRIER_URL again' })
  async disconnect(@Param('lineId', UuidParam('lineId')) lineId: string): Promise<void> {
    await this.providers.disconnect(lineId);
  }
}

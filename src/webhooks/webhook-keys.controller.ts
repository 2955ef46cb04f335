import { Controller, Get, NotFoundException, Param, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Response } from 'express';
import { Public } from '../identity/auth.decorators';
import { isUuid } from '../common/uuid';
import { RateLimitPerIp } from '../limits/ip-rate-limit.guard';
import { JWKS_MAX_AGE_SECONDS, publicKeysAsJwkSet } from './webhook-keys';
import { WebhooksService } from './webhooks.service';

/**
 * The public keys of a v1a webhook endpoint as a JWK Set (RFC 7517, OKP/Ed25519 keys per RFC
 * 8037), one URL per endpoint, no API key: a receiver fetches the keys that verify its
 * deliveries. Unknown ids and v1 endpoints answer the same 404 (docs/webhooks.md, "Public keys").
 */
@ApiTags('webhooks')
@Public()
@RateLimitPerIp('webhookKeys')
@Controller('webhooks')
export class WebhookKeysController {
  constructor(private readonly webhooks: WebhooksService) {}

  // The path is jwksPath(endpointId).
  @Get(':endpointId/jwks.json')
  @ApiOperation({
    summary:
      "A v1a endpoint's signing public keys as a JWK Set (current first; the previous key too for 24 h after a rotation); 404 for an unknown id or an endpoint that signs with v1",
  })
  async jwks(@Param('endpointId') endpointId: string, @Res({ passthrough: true }) res: Response): Promise<{ keys: object[] }> {
    const keys = isUuid(endpointId) ? await this.webhooks.publicKeys(endpointId.toLowerCase()) : [];
    if (keys.length === 0) throw new NotFoundException('no webhook signing keys at this URL: the endpoint is unknown, or it signs with v1');
    res.setHeader('Content-Type', 'application/jwk-set+json; charset=utf-8');
    res.setHeader('Cache-Control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`);
    res.setHeader('Access-Control-Allow-Origin', '*');
    return publicKeysAsJwkSet(keys);
  }
}

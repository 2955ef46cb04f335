import { Controller, Get, Post } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { KeyAction, Public } from './auth.decorators';
import { KeyActionAudit } from './action.guard';

@Controller('api/things')
class CarefulController {
  @Post()
  @KeyAction('send')
  create(): void {}

  @Get('health')
  @Public()
  health(): void {}
}

@Controller('api/others')
class ForgetfulController {
  @Post(':id/act')
  act(): void {}

  @Get()
  @KeyAction('read')
  list(): void {}
}

@Controller('api/sneaky')
class SneakyController {
  @Post()
  @KeyAction('per-call')
  act(): void {}
}

async function boot(...controllers: Array<new () => object>): Promise<void> {
  const module = await Test.createTestingModule({ imports: [DiscoveryModule], controllers, providers: [KeyActionAudit] }).compile();
  const app = module.createNestApplication({ logger: false });
  try {
    await app.init();
  } finally {
    await app.close();
  }
}

describe('KeyActionAudit', () => {
  it('lets the service start when every API-key route declares @KeyAction', async () => {
    await expect(boot(CarefulController)).resolves.toBeUndefined();
  });

  it('stops the service from starting when an API-key route forgets it, naming the route', async () => {
    await expect(boot(CarefulController, ForgetfulController)).rejects.toThrow(
      "API-key routes must declare @KeyAction (the permission they need, or 'per-call'): ForgetfulController.act",
    );
  });

  it("stops the service from starting when a route other than the tool endpoint declares 'per-call' (it would skip the check)", async () => {
    await expect(boot(CarefulController, SneakyController)).rejects.toThrow(
      "only McpController.post may declare @KeyAction('per-call'); declare the permission instead: SneakyController.act",
    );
  });
});

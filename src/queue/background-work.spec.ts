import { Logger } from '@nestjs/common';
import { AppConfig, ProcessRole } from '../config/app-config';
import { BackgroundWork, BackgroundWorkRunner, WORKER_ROLES } from './background-work';

describe('BackgroundWorkRunner', () => {
  function setup(role: ProcessRole) {
    const work = new BackgroundWork();
    const calls: string[] = [];
    const entry = (name: string, enabled?: boolean) => ({
      name,
      roles: WORKER_ROLES,
      cadence: 'every 1 s',
      enabled,
      start: () => calls.push(`start ${name}`),
      stop: () => void calls.push(`stop ${name}`),
    });
    work.add(entry('sweep'));
    work.add(entry('retention', false));
    work.add({ ...entry('api only'), roles: ['api'] });
    const runner = new BackgroundWorkRunner(work, { processRole: role } as AppConfig);
    const logged = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    return { work, runner, calls, logged };
  }
  afterEach(() => jest.restoreAllMocks());

  it('starts what the role runs, logs a line for each of its entries (off ones as off), and stops what it started', async () => {
    const { runner, calls, logged } = setup('worker');
    runner.onApplicationBootstrap();
    expect(calls).toEqual(['start sweep']);
    expect(logged.mock.calls.map(([line]) => line)).toEqual([
      'background work: sweep — every 1 s — roles worker, all',
      'background work: retention — off — roles worker, all',
    ]);
    await runner.onApplicationShutdown();
    expect(calls).toEqual(['start sweep', 'stop sweep']);
  });

  it('an api process starts only what runs in api', () => {
    const { runner, calls } = setup('api');
    runner.onApplicationBootstrap();
    expect(calls).toEqual(['start api only']);
  });

  it('refuses a name registered twice', () => {
    const { work } = setup('all');
    expect(() => work.every({ name: 'sweep', roles: WORKER_ROLES, everyMs: 1000, logger: new Logger(), run: async () => undefined })).toThrow(
      'background work "sweep" is registered twice',
    );
  });
});

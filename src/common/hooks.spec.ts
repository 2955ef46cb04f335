import { Hooks } from './hooks';

describe('Hooks', () => {
  it('runs hooks in the order they were added, each awaited, and answers their results in order', async () => {
    const hooks = new Hooks<[number], string>('test point');
    const seen: string[] = [];
    hooks.add('slow', async (n) => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      seen.push(`slow ${n}`);
      return 'a';
    });
    hooks.add('fast', async (n) => {
      seen.push(`fast ${n}`);
      return 'b';
    });
    expect(await hooks.run(7)).toEqual(['a', 'b']);
    expect(seen).toEqual(['slow 7', 'fast 7']);
    expect(hooks.names()).toEqual(['slow', 'fast']);
  });

  it('a hook that throws stops the run and rejects it, so the owner step fails', async () => {
    const hooks = new Hooks<[]>('test point');
    const ran: string[] = [];
    hooks.add('first', async () => {
      throw new Error('no');
    });
    hooks.add('second', async () => {
      ran.push('second');
    });
    await expect(hooks.run()).rejects.toThrow('no');
    expect(ran).toEqual([]);
  });
});

/**
 * The one way a module lets others act at a point of its work without importing them: the owner
 * keeps a `Hooks` and runs it; another module adds its hook at start-up (onModuleInit). Hooks run
 * one after another, in the order they were added, each awaited, inside whatever transaction the
 * owner passes them; a hook that throws stops the run and fails the owner's step (its transaction
 * rolls back). Used for: an endpoint disabled (webhooks → delivery cancels its waiting
 * deliveries), an inbound message recorded (conversations → attachment extraction), a batch of
 * committed events relayed (events → delivery fan-out).
 */
export class Hooks<Args extends unknown[], Result = void> {
  private readonly hooks: Array<{ name: string; run: (...args: Args) => Promise<Result> }> = [];

  constructor(readonly point: string) {}

  add(name: string, run: (...args: Args) => Promise<Result>): void {
    this.hooks.push({ name, run });
  }

  /** Runs every hook in order; answers their results, in the same order. */
  async run(...args: Args): Promise<Result[]> {
    const results: Result[] = [];
    for (const hook of this.hooks) results.push(await hook.run(...args));
    return results;
  }

  /** The names of the hooks added, in order (diagnostics and tests). */
  names(): string[] {
    return this.hooks.map((h) => h.name);
  }
}

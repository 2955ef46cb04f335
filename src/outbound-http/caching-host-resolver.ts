import { HostResolver } from './url-policy';

/** Most names remembered at once; past it, the one remembered longest ago is forgotten first. */
export const MAX_CACHED_NAMES = 10_000;

/**
 * Remembers each name's addresses for `ttlMs` and makes one lookup of a name at a time, however
 * many attempts ask for it meanwhile. Without it every delivery attempt to a named URL was a
 * getaddrinfo call on libuv's thread pool (4 threads by default, which file reads and crypto
 * share too): a few thousand a second at best, and a network round trip each where no local
 * cache answers (docs/PERFORMANCE.md, change 35).
 *
 * Safe for the URL policy: the policy classifies whatever this answers on every check, and a
 * delivery connects only to an address that passed (pinnedLookup), so a remembered answer cannot
 * take a request anywhere a fresh one could not. What it changes is how soon a moved name is
 * followed: after at most `ttlMs`, as a JVM's or a browser's cache would. Failures and empty
 * answers are not remembered: the next attempt looks again. `ttlMs` 0 turns it off.
 */
export class CachingHostResolver implements HostResolver {
  private readonly answers = new Map<string, { addresses: string[]; until: number }>();
  private readonly lookups = new Map<string, Promise<string[]>>();

  constructor(
    private readonly resolver: HostResolver,
    /** How long an answer is remembered, in ms. */
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxNames = MAX_CACHED_NAMES,
  ) {}

  resolve(host: string): Promise<string[]> {
    if (this.ttlMs <= 0) return this.resolver.resolve(host);
    const remembered = this.answers.get(host);
    if (remembered && remembered.until > this.now()) return Promise.resolve([...remembered.addresses]);
    let lookup = this.lookups.get(host);
    if (!lookup) {
      lookup = this.resolver
        .resolve(host)
        .then((addresses) => {
          this.remember(host, addresses);
          return addresses;
        })
        .finally(() => this.lookups.delete(host));
      this.lookups.set(host, lookup);
    }
    return lookup.then((addresses) => [...addresses]);
  }

  private remember(host: string, addresses: string[]): void {
    this.answers.delete(host);
    if (!Array.isArray(addresses) || addresses.length === 0) return;
    if (this.answers.size >= this.maxNames) this.answers.delete(this.answers.keys().next().value as string);
    this.answers.set(host, { addresses: [...addresses], until: this.now() + this.ttlMs });
  }
}

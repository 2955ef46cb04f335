import AxeBuilder from '@axe-core/playwright';
import type { AxeResults } from 'axe-core';
import { existsSync, mkdirSync } from 'node:fs';
import { AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { Browser, BrowserContext, BrowserContextOptions, chromium, ConsoleMessage, Page, Request, Response } from 'playwright-core';
import { createTestApp, TestApp, TestAppOptions } from '../../support/app';

/**
 * Browser tests drive Debian's chromium (installed by scripts/ensure-chromium.sh from the browser
 * project's global setup) with playwright-core: no browser build is ever downloaded.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags known to work on a closed network; playwright gives every launch a fresh --user-data-dir. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const VIEWPORT = { width: 1280, height: 800 };

/** Every context starts alike, so pages and screenshots do not depend on the machine. */
export const CONTEXT_OPTIONS: BrowserContextOptions = {
  viewport: VIEWPORT,
  deviceScaleFactor: 1,
  locale: 'en-US',
  timezoneId: 'UTC',
  colorScheme: 'light',
  reducedMotion: 'reduce',
};

/** Where screenshot() writes: docs/ui/<name>.png. */
export const SCREENSHOT_DIR = join(__dirname, '../../../docs/ui');

export function openBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

export interface StartedApp extends TestApp {
  /** `http://127.0.0.1:<port>`, also the app's PUBLIC_BASE_URL (so origin checks accept the browser). */
  baseUrl: string;
}

/** Boots the service (test/support/app.ts) on a free port of 127.0.0.1, with PUBLIC_BASE_URL pointing at it. */
export async function startApp(options: TestAppOptions = {}): Promise<StartedApp> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const t = await createTestApp({ ...options, env: { PUBLIC_BASE_URL: baseUrl, ...options.env } });
  await t.app.listen(port, '127.0.0.1');
  return { ...t, baseUrl };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * What went wrong in the pages it watches: console errors (CSP violations among them), uncaught
 * exceptions, requests that failed and responses of 400 or more. A test that provokes one on
 * purpose says so with allow(pattern), or clears the list after checking it.
 */
export class PageProblems {
  private readonly seen: string[] = [];
  private readonly allowed: RegExp[] = [
    // Chromium asks for /favicon.ico by itself when a page names no icon: its 404 is not the page's.
    /^console error: Failed to load resource: .* 404 .*\/favicon\.ico:\d+\)$/,
    // A page with live updates holds its event stream open until it is left; leaving aborts it
    // (a refused stream is still an HTTP problem).
    /^request failed: GET .*\/live\/events(\?.*)? \(net::ERR_ABORTED\)$/,
  ];

  watch(page: Page): this {
    page.on('console', (message: ConsoleMessage) => {
      if (message.type() !== 'error') return;
      const { url, lineNumber } = message.location();
      this.add(`console error: ${message.text()}${url ? ` (${url}:${lineNumber})` : ''}`);
    });
    page.on('pageerror', (error: Error) => this.add(`uncaught exception: ${error.message}`));
    page.on('requestfailed', (request: Request) => {
      const error = request.failure()?.errorText ?? 'unknown error';
      // A live page fetching itself again (/static/app.js) when the person leaves it: the browser
      // cancels the fetch, as it cancels the event stream above. Only the cancellation is let
      // through; a fetch the server broke fails with another error.
      if (request.resourceType() === 'fetch' && error === 'net::ERR_ABORTED') return;
      this.add(`request failed: ${request.method()} ${request.url()} (${error})`);
    });
    page.on('response', (response: Response) => {
      if (response.status() >= 400) this.add(`HTTP ${response.status()}: ${response.request().method()} ${response.url()}`);
    });
    return this;
  }

  /** Ignores the problems whose text matches `pattern` from now on (e.g. /HTTP 401/ for a refused sign-in). */
  allow(pattern: RegExp): this {
    this.allowed.push(pattern);
    return this;
  }

  get list(): readonly string[] {
    return [...this.seen];
  }

  clear(): void {
    this.seen.length = 0;
  }

  /** Throws listing every problem seen. */
  expectNone(): void {
    if (this.seen.length === 0) return;
    throw new Error(`The page had ${this.seen.length} problem(s):\n${this.seen.map((p) => `  - ${p}`).join('\n')}`);
  }

  private add(problem: string): void {
    if (!this.allowed.some((pattern) => pattern.test(problem))) this.seen.push(problem);
  }
}

/** Watches one page: `const problems = watchPage(page); ...; problems.expectNone()`. */
export function watchPage(page: Page): PageProblems {
  return new PageProblems().watch(page);
}

/**
 * Runs axe-core on the page as it is now and throws listing every serious or critical violation
 * (rule id, impact, help, the selectors of the elements): none is allowed. Returns axe's results
 * for tests that look further (minor and moderate ones, incomplete checks).
 */
export async function expectAccessible(page: Page, name: string): Promise<AxeResults> {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (serious.length > 0) {
    const lines = serious.flatMap((v) => [
      `${v.id} (${v.impact}): ${v.help} [${v.helpUrl}]`,
      ...v.nodes.map((node) => `    at ${node.target.flat().join(' >>> ')}`),
    ]);
    throw new Error(`${name} (${page.url()}) has ${serious.length} serious or critical accessibility violation(s):\n${lines.join('\n')}`);
  }
  return results;
}

/** A phone's width, for the screenshots of pages people reach from a phone (e.g. consent, from a mobile app). */
export const PHONE_VIEWPORT = { width: 375, height: 740 };

/**
 * Writes a full-page screenshot to `<dir>/<name>.png` (docs/ui/ by default) at 1280×800 (or
 * `viewport`) once the network is idle, only when the file is missing or UPDATE_SCREENSHOTS=1: a
 * normal run leaves the committed files alone. Returns the path written, or null when it kept the
 * existing file.
 */
export async function screenshot(
  page: Page,
  name: string,
  options: { dir?: string; viewport?: { width: number; height: number } } = {},
): Promise<string | null> {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name)) throw new Error(`screenshot name '${name}': use a-z, 0-9 and -`);
  const dir = options.dir ?? SCREENSHOT_DIR;
  const file = join(dir, `${name}.png`);
  if (process.env.UPDATE_SCREENSHOTS !== '1' && existsSync(file)) return null;
  await page.setViewportSize(options.viewport ?? VIEWPORT);
  await page.waitForLoadState('networkidle');
  await page.evaluate('document.fonts.ready.then(() => undefined)');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: file, fullPage: true, animations: 'disabled', caret: 'hide', scale: 'css' });
  return file;
}

/**
 * Signs the user in on `page` as a person does: a sign-in link the admin API makes, opened, and
 * its **Sign in** button pressed; resolves on the Conversations page it lands on.
 */
export async function signInAs(app: StartedApp, page: Page, userId: string): Promise<void> {
  const res = await app.admin.post(`/admin/users/${userId}/sign-in-links`).expect(201);
  const url = new URL(res.body.url);
  await page.goto(url.pathname + url.search);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL('**/conversations');
}

export interface BrowserFixture {
  /** One chromium for the file. */
  readonly browser: Browser;
  /** A fresh context (cookies, storage) per test, with baseURL set to the app, so `page.goto('/path')` works. */
  readonly context: BrowserContext;
  /** A page of that context. */
  readonly page: Page;
  /** The problems of every page of the context; the test fails after it if any is left. */
  readonly problems: PageProblems;
  /** The app started for the file. */
  readonly app: StartedApp;
  readonly baseUrl: string;
}

export interface BrowserFixtureOptions {
  /** Options of the app started for the file (createTestApp), or false for no app. */
  app?: TestAppOptions | false;
  /** Context options over CONTEXT_OPTIONS. */
  context?: BrowserContextOptions;
}

/**
 * Call at the top of a describe: starts chromium and the app before the file's tests, gives each
 * test a fresh context and page, fails a test whose pages logged errors or failed requests, and
 * closes everything after.
 */
export function useBrowser(options: BrowserFixtureOptions = {}): BrowserFixture {
  let browser: Browser | undefined;
  let app: StartedApp | undefined;
  let context: BrowserContext | undefined;
  let page: Page | undefined;
  let problems: PageProblems | undefined;

  beforeAll(async () => {
    [browser, app] = await Promise.all([openBrowser(), options.app === false ? undefined : startApp(options.app)]);
  });
  afterAll(async () => {
    await Promise.all([browser?.close(), app?.close()]);
  });
  beforeEach(async () => {
    const seen = new PageProblems();
    problems = seen;
    context = await browser!.newContext({ ...CONTEXT_OPTIONS, baseURL: app?.baseUrl, ...options.context });
    context.on('page', (p) => seen.watch(p));
    page = await context.newPage();
  });
  afterEach(async () => {
    await context?.close();
    context = page = undefined;
    problems?.expectNone();
  });

  const need = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`useBrowser(): ${what} is only there inside a test (or no app was asked for)`);
    return value;
  };
  return {
    get browser() {
      return need(browser, 'browser');
    },
    get context() {
      return need(context, 'context');
    },
    get page() {
      return need(page, 'page');
    },
    get problems() {
      return need(problems, 'problems');
    },
    get app() {
      return need(app, 'app');
    },
    get baseUrl() {
      return need(app, 'app').baseUrl;
    },
  };
}

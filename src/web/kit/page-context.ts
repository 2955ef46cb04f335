import type { NextFunction, Request, Response } from 'express';
import { createContext } from 'preact';

/**
 * What the layout shows that depends on how the service runs, not on the page: the development
 * outbox link only where that route exists (APP_ENV=development). WebModule's middleware puts it
 * on `response.locals`; sendPage gives it to the page; Layout reads it.
 */
export interface PageSettings {
  devOutbox: boolean;
}

export const PageContext = createContext<PageSettings>({ devOutbox: false });

const LOCALS_KEY = 'pageSettings';

/** The middleware that hands the pages their settings (web.module.ts). */
export function pageSettings(settings: PageSettings): (request: Request, response: Response, next: NextFunction) => void {
  return (_request, response, next) => {
    response.locals[LOCALS_KEY] = settings;
    next();
  };
}

/** The settings a response's page renders with (the defaults where the middleware did not run). */
export function pageSettingsOf(response: Response): PageSettings {
  return (response.locals?.[LOCALS_KEY] as PageSettings | undefined) ?? { devOutbox: false };
}

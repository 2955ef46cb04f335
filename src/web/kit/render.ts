import { Response } from 'express';
import { h, type VNode } from 'preact';
import { renderToString } from 'preact-render-to-string';
import { PageContext, PageSettings, pageSettingsOf } from './page-context';

/** A page as HTML: preact-render-to-string escapes every text and attribute value it outputs. */
export function renderPage(page: VNode, settings: PageSettings = { devOutbox: false }): string {
  return `<!DOCTYPE html>${renderToString(h(PageContext.Provider, { value: settings }, page))}`;
}

/** Sends a page with its status, rendered with the response's page settings (page-context.ts). */
export function sendPage(response: Response, status: number, page: VNode): void {
  response
    .status(status)
    .type('text/html; charset=utf-8')
    .send(renderPage(page, pageSettingsOf(response)));
}

/** A 303 See Other: after a POST the browser GETs the target. */
export function seeOther(response: Response, location: string): void {
  response.status(303).setHeader('Location', location);
  response.end();
}

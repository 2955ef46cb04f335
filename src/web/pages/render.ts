import { Response } from 'express';
import type { VNode } from 'preact';
import { renderToString } from 'preact-render-to-string';

/** A page as HTML: preact-render-to-string escapes every text and attribute value it outputs. */
export function renderPage(page: VNode): string {
  return `<!DOCTYPE html>${renderToString(page)}`;
}

/** Sends a page with its status. */
export function sendPage(response: Response, status: number, page: VNode): void {
  response.status(status).type('text/html; charset=utf-8').send(renderPage(page));
}

/** A 303 See Other: after a POST the browser GETs the target. */
export function seeOther(response: Response, location: string): void {
  response.status(303).setHeader('Location', location);
  response.end();
}

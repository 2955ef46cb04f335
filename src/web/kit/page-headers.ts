import { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';

/**
 * The headers of every web page (docs/web.md): helmet with a strict CSP (no inline script or
 * style, nothing from other origins, no framing, forms post only here), X-Frame-Options DENY,
 * Referrer-Policy same-origin, and Cache-Control no-store (pages carry personal data; the static
 * assets set their own). HSTS only when the service is served over https.
 */
export function pageHeaders(publicBaseUrl: string): (request: Request, response: Response, next: NextFunction) => void {
  const headers = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        objectSrc: ["'none'"],
      },
    },
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'same-origin' },
    strictTransportSecurity: publicBaseUrl.startsWith('https://') ? { maxAge: 31_536_000 } : false,
  });
  return (request, response, next) => {
    response.setHeader('Cache-Control', 'no-store');
    headers(request, response, next);
  };
}

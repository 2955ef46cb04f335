import { HttpException } from '@nestjs/common';
import { DomainError, SendRefusedError } from '../common/errors';
import { AuditVerdict } from './audit-call';

/**
 * How a call that threw ended: a domain error (the caller or its input turned away) is `refused`
 * with its code, a send refusal naming its rule; an HTTP 4xx (a malformed request body) is
 * `refused`; anything else `failed`. The error's own text is never kept: it may quote the input.
 */
export function verdictOf(error: unknown): AuditVerdict {
  if (error instanceof SendRefusedError) return { outcome: 'refused', errorCode: error.code, detail: `rule: ${error.rule}` };
  if (error instanceof DomainError) return { outcome: 'refused', errorCode: error.code, detail: error.field ? `field: ${error.field}` : null };
  if (error instanceof HttpException) {
    const status = error.getStatus();
    return { outcome: status < 500 ? 'refused' : 'failed', errorCode: `HTTP_${status}`, detail: null };
  }
  return { outcome: 'failed', errorCode: 'INTERNAL', detail: null };
}

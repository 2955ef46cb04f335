import { Catch } from '@nestjs/common';
import { HttpErrorBody, HttpErrorFilter } from '../common/http-error.filter';
import { RequestBodyError } from '../common/request-body';
import { failure, INVALID_REQUEST } from './json-rpc';

/**
 * A refused MCP request body (too large, compressed, over the body budget) answered as JSON-RPC:
 * same status and headers as any REST route, the body an Invalid Request error with id null.
 */
@Catch(RequestBodyError)
export class McpBodyErrorFilter extends HttpErrorFilter {
  protected override shape(body: HttpErrorBody): object {
    return failure(null, INVALID_REQUEST, body.message);
  }
}

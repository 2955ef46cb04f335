import { LineRef, LineType, normalizeAddress } from '../../identity/account.types';
import { actingThrough, Principal } from '../../identity/principal';
import { NotFoundError, ValidationError } from '../../common/errors';

/** How a send tool names the line a new thread goes from. */
export interface LineChoice {
  type: LineType;
  /** What the tool calls such a line in its messages (`email account`, `phone line`). */
  noun: string;
  /** The tool that lists their ids. */
  listTool: string;
  /** The argument holding a line id, and its value if given. */
  idField: string;
  id?: string;
  /** The argument holding the line's address (send_sms's `from`), and its value if given. */
  addressField?: string;
  address?: string;
}

/**
 * The line of the caller's (a key's lines, or a person's) that a new thread goes from: the one
 * named by id or address, or the only one of its type. Used by send_email and send_sms, so both
 * choose, and refuse, alike.
 */
export function sendingLine(caller: Principal, choice: LineChoice): LineRef {
  const who = actingThrough(caller);
  const lines = caller.lines.filter((l) => l.type === choice.type);
  if (choice.id !== undefined && choice.address !== undefined) {
    throw new ValidationError(`give at most one of ${choice.idField} and ${choice.addressField}`, choice.addressField);
  }
  if (choice.id !== undefined) {
    const line = lines.find((l) => l.id === choice.id);
    if (!line) throw NotFoundError.of(choice.noun, choice.id, choice.idField);
    return line;
  }
  if (choice.address !== undefined) {
    const address = normalizeAddress(choice.address);
    const line = lines.find((l) => l.address === address);
    if (!line) throw new NotFoundError(`${choice.noun} ${address} not found among the lines ${who} may use`, choice.addressField);
    return line;
  }
  if (lines.length === 0) throw new ValidationError(`${who} may use no ${choice.noun}`, choice.idField);
  if (lines.length > 1) {
    throw new ValidationError(
      `${choice.idField} is required: ${who} may use ${lines.length} ${choice.noun}s (${choice.listTool} gives their ids)`,
      choice.idField,
    );
  }
  return lines[0];
}

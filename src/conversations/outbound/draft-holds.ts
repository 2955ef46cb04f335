import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { QueuedMessage } from './outbound.repository';

/**
 * What holds a draft-only credential's message as a turn awaiting a person (issue 45, "Draft-only
 * credentials"): the agents feature, which owns agent_turns. It imports outbound (approving a draft
 * sends it here), so it registers itself with DraftHolds rather than outbound importing it.
 */
export interface DraftKeeper {
  /** Writes the draft turn holding `m` as proposed, in the caller's transaction, with agent_turn.awaiting_approval; answers its id. */
  hold(tx: EntityManager, m: QueuedMessage): Promise<string>;
  /** The turn as the send tools answer it (get_agent_turn's shape), once the transaction has committed. */
  view(turnId: string): Promise<object>;
}

@Injectable()
export class DraftHolds {
  private keeper: DraftKeeper | null = null;

  register(keeper: DraftKeeper): void {
    this.keeper = keeper;
  }

  get(): DraftKeeper {
    if (!this.keeper) throw new Error("no DraftKeeper is registered: the agents module holds draft-only credentials' sends");
    return this.keeper;
  }
}

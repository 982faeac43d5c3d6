/**
 * The passthrough strategy.
 */
import type { Message } from "../core/messages.ts";
import type { CompactResult, CompactStrategy } from "./compact-strategy.ts";

/**
 * Never compacts: returns a copy of the history and phase 0. Use when memory is plentiful or
 * workflows are short; the context can then outgrow the budget.
 */
export class NoCompact implements CompactStrategy {
  compact(messages: readonly Message[]): CompactResult {
    return { messages: [...messages], phase: 0 };
  }
}

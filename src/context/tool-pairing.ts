/**
 * Which tool message answers which tool-call message, and which batches were blocked.
 * Compaction uses it to never split a call from its answer.
 */
import { type Message, MessageRole, MessageType } from "../core/messages.ts";

/** Corrections the loop injects; they matter only within the turn that produced them. */
export const NUDGE_TYPES: ReadonlySet<MessageType> = new Set<MessageType>([
  MessageType.STEP_NUDGE,
  MessageType.PREREQUISITE_NUDGE,
  MessageType.RETRY_NUDGE,
]);

/** True for step, prerequisite and retry nudges. */
export function isNudge(message: Message): boolean {
  return NUDGE_TYPES.has(message.metadata.type);
}

/** True for an assistant message that carries at least one tool call. */
export function hasToolCalls(message: Message): boolean {
  return message.toolCalls !== undefined && message.toolCalls.length > 0;
}

const TOOL_ROLE: MessageRole = MessageRole.TOOL;

/** Call/answer links of a history, by message index. */
export interface ToolPairing {
  /** Per message index: the index of the tool-call message it answers, or -1. */
  ownerOf: readonly number[];
  /** Tool-call message index → indices of its answers, in order. */
  answersOf: ReadonlyMap<number, readonly number[]>;
  /**
   * Tool-call messages of blocked batches: every call was answered, and only by nudges (unknown
   * tool, premature terminal, unmet prerequisite, "not run"). Such a batch never ran.
   */
  blocked: ReadonlySet<number>;
}

/**
 * Link every role-`tool` message to the newest preceding tool-call message holding its
 * `toolCallId` (ids may repeat across batches). Tool messages with no such call stay unlinked.
 */
export function pairToolMessages(messages: readonly Message[]): ToolPairing {
  const ownerOf = new Array<number>(messages.length).fill(-1);
  const answersOf = new Map<number, number[]>();
  const owners = new CallOwners(messages);
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    owners.see(index);
    if (message.role !== TOOL_ROLE || message.toolCallId === undefined) continue;
    const owner = owners.find(message.toolCallId);
    if (owner < 0) continue;
    ownerOf[index] = owner;
    const answers = answersOf.get(owner);
    if (answers) answers.push(index);
    else answersOf.set(owner, [index]);
  }
  const blocked = new Set<number>();
  for (const [owner, answers] of answersOf) {
    if (isBlockedBatch(messages, owner, answers)) blocked.add(owner);
  }
  return { ownerOf, answersOf, blocked };
}

/**
 * Finds the newest tool-call message seen so far that holds a call id. Answers nearly always
 * follow their own batch, so the newest batch is checked first; the id index over all batches
 * is built only on the first answer that is not for it.
 */
class CallOwners {
  readonly #messages: readonly Message[];
  #newest = -1;
  #seen = 0;
  #byId: Map<string, number> | undefined;

  constructor(messages: readonly Message[]) {
    this.#messages = messages;
  }

  /** Take message `index` into account (indices must come in order). */
  see(index: number): void {
    this.#seen = index + 1;
    if (!hasToolCalls(this.#messages[index]!)) return;
    this.#newest = index;
    if (this.#byId) this.#index(index);
  }

  /** Index of the newest seen tool-call message holding `callId`, or -1. */
  find(callId: string): number {
    const newest = this.#messages[this.#newest];
    if (newest?.toolCalls?.some((call) => call.callId === callId)) return this.#newest;
    if (!this.#byId) {
      this.#byId = new Map();
      for (let index = 0; index < this.#seen; index++) this.#index(index);
    }
    return this.#byId.get(callId) ?? -1;
  }

  #index(index: number): void {
    for (const call of this.#messages[index]!.toolCalls ?? []) this.#byId!.set(call.callId, index);
  }
}

function isBlockedBatch(messages: readonly Message[], owner: number, answers: readonly number[]): boolean {
  const answered = new Set<string>();
  for (const index of answers) {
    const answer = messages[index]!;
    if (!isNudge(answer)) return false;
    answered.add(answer.toolCallId!);
  }
  return (messages[owner]!.toolCalls ?? []).every((call) => answered.has(call.callId));
}

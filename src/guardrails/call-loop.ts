/**
 * Loop detection over a conversation's history: an agent that sends its whole history with each
 * request (the proxy's clients) shows how often the model has repeated the same call with the same
 * result. Counted here, pure; the answer escalates with the count: a `[RepeatedCall]` note (the
 * loop's own note, `repeatedCallNudge`), then the looping tool left out of the tools offered, then
 * the turn ended with a text answer naming the loop.
 *
 * Polling stays usable: a call counts only while its result is the same (a poll that sees
 * something change is no loop), and tools listed in `exemptTools` never count.
 */
import { z } from "zod";
import { type Message, MessageRole, MessageType } from "../core/messages.ts";
import { callLoopStopMessage } from "../prompts/guard-nudges.ts";
import { repeatedCallNudge } from "../prompts/nudges.ts";
import { type ComparedCall, isSameCall } from "./repeated-call.ts";

/** The rules of the call-loop guard; `threshold`: identical rounds in a row that make a loop. */
export const callLoopRulesSchema = z.object({
  /** Identical rounds (same calls, same results) in a row before the first note; at least 2. */
  threshold: z.number().int().min(2).default(3),
  /** Tools whose repeated calls are never a loop (polling, waiting, `sleep`). */
  exemptTools: z.array(z.string().min(1)).default([]),
});
export type CallLoopRules = z.output<typeof callLoopRulesSchema>;

/** Default rules: three identical rounds in a row, no tool exempt. */
export const DEFAULT_CALL_LOOP_RULES: CallLoopRules = Object.freeze({ threshold: 3, exemptTools: [] });

/** One round of an agent's history: a batch of calls and the results it got, in call order. */
interface Round {
  calls: ComparedCall[];
  results: (string | undefined)[];
}

/** The latest run of identical rounds: its batch and how many times it came in a row. */
export interface CallStreak {
  calls: ComparedCall[];
  repeats: number;
}

/** What the guard does with a request. */
export type CallLoopDecision =
  | { kind: "none" }
  /** The threshold reached: the last result carries a `[RepeatedCall]` note. */
  | { kind: "note"; tools: string[]; repeats: number; note: string }
  /**
   * One more: the note, and the looping tools are left out of this request's tools; `message`
   * ends the turn if the model still calls them until its retries run out.
   */
  | { kind: "narrow"; tools: string[]; repeats: number; note: string; message: string }
  /** Two more: the turn ends with a text answer naming the loop; the model is not asked. */
  | { kind: "stop"; tools: string[]; repeats: number; message: string };

/**
 * The latest streak of identical rounds at the end of `messages`, or null when the history does
 * not end with a round's results. Rounds are identical when their calls are the same (tool and
 * arguments, key order ignored) and so are their results. A user message ends the streak (after
 * the last round: the user spoke, the model gets a fresh start), except an agent's own reminder
 * (a message that is one `<system-reminder>` block, as Claude Code adds to tool-result turns); so
 * does an assistant answer without calls.
 */
export function findCallStreak(messages: readonly Message[]): CallStreak | null {
  const rounds = trailingRounds(messages);
  const [last] = rounds;
  if (last === undefined) return null;
  let repeats = 1;
  for (const round of rounds.slice(1)) {
    if (!isSameRound(round, last)) break;
    repeats += 1;
  }
  return { calls: last.calls, repeats };
}

/**
 * What to do about a call loop in `messages`: nothing below `threshold` identical rounds, a note
 * at `threshold`, a narrowed tool list at `threshold + 1`, the end of the turn from `threshold + 2`.
 * `next`: the tools the note tells the model to call instead (the proxy's `respond`), if any.
 * @example
 * decideCallLoop(history, { threshold: 3, exemptTools: ["check_status"] });
 */
export function decideCallLoop(
  messages: readonly Message[],
  rules: CallLoopRules,
  next: readonly string[] = [],
): CallLoopDecision {
  const streak = findCallStreak(messages);
  if (streak === null || streak.repeats < rules.threshold) return { kind: "none" };
  const tools = [...new Set(streak.calls.map((call) => call.tool))];
  if (tools.every((tool) => rules.exemptTools.includes(tool))) return { kind: "none" };
  const looping = tools.filter((tool) => !rules.exemptTools.includes(tool));
  const first = streak.calls.find((call) => looping.includes(call.tool)) as ComparedCall;
  const { repeats } = streak;
  const message = callLoopStopMessage(first.tool, first.args, repeats);
  if (repeats >= rules.threshold + 2) return { kind: "stop", tools: looping, repeats, message };
  const others = next.filter((name) => !looping.includes(name));
  const note = repeatedCallNudge(first.tool, others, false);
  return repeats === rules.threshold
    ? { kind: "note", tools: looping, repeats, note }
    : { kind: "narrow", tools: looping, repeats, note, message };
}

/** The rounds at the end of `messages`, newest first, up to the first break. */
function trailingRounds(messages: readonly Message[]): Round[] {
  const rounds: Round[] = [];
  let index = messages.length - 1;
  while (index >= 0) {
    // An agent's reminders (Claude Code's `<system-reminder>` blocks) are no user turn.
    while (index >= 0 && isReminder(messages[index] as Message)) index -= 1;
    const results = new Map<string, string>();
    const loose: string[] = [];
    while (index >= 0 && messages[index]?.role === MessageRole.TOOL) {
      const message = messages[index] as Message;
      if (message.toolCallId !== undefined) results.set(message.toolCallId, message.content);
      else loose.unshift(message.content);
      index -= 1;
    }
    const call = messages[index];
    if (results.size + loose.length === 0 || call?.role !== MessageRole.ASSISTANT) break;
    if (call.toolCalls === undefined || call.toolCalls.length === 0) break;
    rounds.push({
      calls: call.toolCalls.map((info) => ({ tool: info.name, args: info.args })),
      results: call.toolCalls.map((info, position) => results.get(info.callId) ?? loose[position]),
    });
    index -= 1;
    // Reasoning kept as its own assistant message before the calls belongs to the round.
    while (
      index >= 0 &&
      messages[index]?.role === MessageRole.ASSISTANT &&
      !messages[index]?.toolCalls?.length
    ) {
      if (messages[index]?.metadata.type !== MessageType.REASONING) break;
      index -= 1;
    }
  }
  return rounds;
}

function isSameRound(first: Round, second: Round): boolean {
  return (
    first.calls.length === second.calls.length &&
    first.calls.every((call, index) => {
      const other = second.calls[index] as ComparedCall;
      return isSameCall(call, other) && first.results[index] === second.results[index];
    })
  );
}

const REMINDER = /^\s*<system-reminder>[\s\S]*<\/system-reminder>\s*$/;

function isReminder(message: Message): boolean {
  return message.role === MessageRole.USER && REMINDER.test(message.content);
}

/**
 * The call-loop guard on the proxy's guarded path (ADR 020): the request's history is read for a
 * model repeating the same call with the same result (`decideCallLoop`), and the request is
 * changed to match: a `[RepeatedCall]` note on the last result, then the looping tools left out
 * of the tools offered, then no model call at all but a text answer naming the loop. The note and
 * the narrowed tools go upstream only; the client's history is never changed.
 */
import type { Message } from "../core/messages.ts";
import { type CallLoopDecision, type CallLoopRules, decideCallLoop } from "../guardrails/call-loop.ts";
import { RESPOND_TOOL_NAME } from "../tools/respond.ts";
import { answerFromResponse, type ProxyAnswer } from "./answer.ts";
import { exhaustionOf } from "./exhaustion.ts";
import type { ProxyRequest } from "./proxy-request.ts";
import type { RequestStats } from "./request-stats.ts";

/** What the guard made of a request: the request to send, or the text that ends the turn. */
export type GuardedRequest =
  | { action: "none" | "note"; request: ProxyRequest }
  /** `message`: the answer if the model still calls the tools left out until its retries run out. */
  | { action: "narrow"; request: ProxyRequest; message: string }
  | { action: "stop"; message: string };

/**
 * Apply the call-loop decision to `request`. `next`: the tools the note names instead (the
 * injected `respond`, when the proxy adds it). Pure.
 */
export function guardCallLoop(
  request: ProxyRequest,
  rules: CallLoopRules,
  next: readonly string[] = [],
): GuardedRequest {
  const decision: CallLoopDecision = decideCallLoop(request.messages, rules, next);
  switch (decision.kind) {
    case "none":
      return { action: "none", request };
    case "stop":
      return { action: "stop", message: decision.message };
    case "note":
      return {
        action: "note",
        request: { ...request, messages: withNoteOnLastResult(request.messages, decision.note) },
      };
    case "narrow": {
      const messages = withNoteOnLastResult(request.messages, decision.note);
      const tools = request.tools.filter((tool) => !decision.tools.includes(tool.name));
      return { action: "narrow", request: { ...request, messages, tools }, message: decision.message };
    }
  }
}

/** `messages` with `note` after the content of the last tool result (as the loop's note). */
function withNoteOnLastResult(messages: readonly Message[], note: string): Message[] {
  const copy = [...messages];
  const index = copy.findLastIndex((message) => message.role === "tool");
  const last = copy[index];
  if (last !== undefined) copy[index] = { ...last, content: `${last.content}\n\n${note}` };
  return copy;
}

/**
 * Answer `request` with `run` under the call-loop guard (`rules` absent: off), counting what it did
 * in `stats.loopGuard`: the request as the guard changed it; or, at the stop, the text answer
 * naming the loop, with no model call. A narrowed request whose retries run out (the model kept
 * calling the tool left out) ends the same way, rather than with `retries_exhausted`.
 */
export async function withLoopGuard(
  request: ProxyRequest,
  rules: CallLoopRules | undefined,
  stats: RequestStats,
  run: (request: ProxyRequest) => Promise<ProxyAnswer>,
): Promise<ProxyAnswer> {
  if (rules === undefined || request.tools.length === 0) return run(request);
  const respondInjected = !request.tools.some((tool) => tool.name === RESPOND_TOOL_NAME);
  const guarded = guardCallLoop(request, rules, respondInjected ? [RESPOND_TOOL_NAME] : []);
  if (guarded.action !== "none") stats.loopGuard = guarded.action;
  if (guarded.action === "stop") return stopAnswer(request, guarded.message);
  if (guarded.action !== "narrow") return run(guarded.request);
  try {
    return await run(guarded.request);
  } catch (error) {
    if (exhaustionOf(error, null) === null) throw error;
    stats.loopGuard = "stop";
    return stopAnswer(request, guarded.message);
  }
}

function stopAnswer(request: ProxyRequest, message: string): ProxyAnswer {
  return answerFromResponse(
    { content: message },
    { model: request.model ?? "default", idPrefix: request.callIdPrefix, prompt: request.messages },
  );
}

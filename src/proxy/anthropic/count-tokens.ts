/**
 * `POST /v1/messages/count_tokens`: the tokens of the prompt the proxy would send for a Messages
 * body, counted by the backend's own template and tokenizer when it has one (llama-server
 * `/apply-template` + `/tokenize`), else estimated, and said so.
 */
import { serializeHistory } from "../../core/messages.ts";
import { applyReasoningReplay, type ReasoningReplay } from "../../core/reasoning-replay.ts";
import type { ToolSpec } from "../../core/tools.ts";
import { RESPOND_TOOL_NAME, respondTool } from "../../tools/respond.ts";
import type { ProxyBackend } from "../backend/index.ts";
import { createExactCounter, estimatePromptTokens } from "../prompt-limit.ts";
import type { ProxyRequest } from "../proxy-request.ts";

/** A prompt's tokens, and whether the backend's tokenizer counted them. */
export interface TokenCount {
  inputTokens: number;
  exact: boolean;
}

/** Counts a request's prompt. */
export type TokenCounter = (request: ProxyRequest, signal: AbortSignal) => Promise<TokenCount>;

/** The header that says how a count was made: `exact` or `estimate`. */
export const TOKEN_COUNT_HEADER = "x-forge-token-count";

/**
 * A counter for `backend`: what the backend would be sent for the request (the reasoning replay
 * policy applied, the injected `respond` tool with the client's tools), exact while the backend's
 * tokenizer answers, else `estimatePromptTokens`.
 */
export function createTokenCounter(
  backend: ProxyBackend,
  options: { reasoningReplay?: ReasoningReplay | undefined } = {},
): TokenCounter {
  const counter = createExactCounter(backend.tokenizer?.());
  const respond = respondTool().spec;
  return async (request, signal) => {
    const messages = applyReasoningReplay(request.messages, options.reasoningReplay ?? "none");
    const wire = serializeHistory(messages, "openai");
    const tools: ToolSpec[] =
      request.tools.length === 0 || request.tools.some((tool) => tool.name === RESPOND_TOOL_NAME)
        ? request.tools
        : [...request.tools, respond];
    const exact = await counter.count(wire, tools, signal);
    return exact === null
      ? { inputTokens: estimatePromptTokens(wire, tools), exact: false }
      : { inputTokens: exact, exact: true };
  };
}

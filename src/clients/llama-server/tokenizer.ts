/**
 * Exact prompt counts from llama-server: the prompt rendered by the model's own chat template
 * (`POST /apply-template`, tools included) and counted by its own tokenizer (`POST /tokenize`).
 */
import { z } from "zod";
import { BackendError } from "../../core/errors.ts";
import { type ToolSpec, toOpenAITool } from "../../core/tools.ts";
import { authHeaders, joinUrl, openExchange } from "../http.ts";

/** Counts prompts with the backend's own chat template and tokenizer. */
export interface PromptTokenizer {
  /** The backend's context window in tokens; null when it does not say. */
  contextLength(): Promise<number | null>;
  /** Tokens of the prompt these wire messages (OpenAI shape) and tools make. */
  countPrompt(
    messages: readonly Record<string, unknown>[],
    tools: readonly ToolSpec[],
    signal?: AbortSignal,
  ): Promise<number>;
  /** Tokens of a bare text (special tokens parsed, BOS added as the model does). */
  countText(text: string, signal?: AbortSignal): Promise<number>;
}

/** Options of {@link createLlamaServerTokenizer}. */
export interface LlamaServerTokenizerOptions {
  /** The server's URL, with or without `/v1`. */
  baseUrl: string;
  apiKey?: string | undefined;
  /** The context window, e.g. an `OpenAICompatibleClient`'s `getContextLength` (read once). */
  contextLength: () => Promise<number | null>;
  /** Longest silence from the server per request. Default 60 000. */
  timeoutMs?: number;
}

const templateSchema = z.object({ prompt: z.string() });
const tokensSchema = z.object({ tokens: z.array(z.unknown()) });

/**
 * A {@link PromptTokenizer} for llama-server: the prompt is rendered by `POST /apply-template`
 * (with the OpenAI `tools` entries, as a chat request sends them) and counted by
 * `POST /tokenize`. A server without `/apply-template` has the JSON of the messages and tools
 * counted instead (an approximation, not the rendered prompt). A server without `/tokenize` is
 * a `BackendError(404)` saying so: it is not a llama-server.
 * @example
 * const tokenizer = createLlamaServerTokenizer({ baseUrl: "http://127.0.0.1:8080", contextLength: () => client.getContextLength() });
 * const promptTokens = await tokenizer.countPrompt(wireMessages, tools);
 */
export function createLlamaServerTokenizer(options: LlamaServerTokenizerOptions): PromptTokenizer {
  const root = options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
  const headers = authHeaders(options.apiKey);
  const post = async (
    path: string,
    body: unknown,
    signal: AbortSignal | undefined,
  ): Promise<{ found: boolean; json: unknown }> => {
    const exchange = await openExchange({
      method: "POST",
      url: joinUrl(root, path),
      json: body,
      ...(headers && { headers }),
      timeoutMs: options.timeoutMs ?? 60_000,
      signal,
    });
    const text = await exchange.text();
    if (exchange.status === 404) return { found: false, json: null };
    if (!exchange.ok) throw new BackendError(exchange.status, text);
    return { found: true, json: JSON.parse(text) };
  };
  const countText = async (text: string, signal?: AbortSignal): Promise<number> => {
    const answer = await post("tokenize", { content: text, add_special: true, parse_special: true }, signal);
    if (!answer.found) {
      throw new BackendError(
        404,
        "",
        `${root} has no POST /tokenize: exact prompt counts need llama-server (or a server with its tokenize endpoint).`,
      );
    }
    return tokensSchema.parse(answer.json).tokens.length;
  };
  let contextLength: Promise<number | null> | undefined;
  return {
    contextLength: () => {
      contextLength ??= options.contextLength();
      return contextLength;
    },
    countText,
    async countPrompt(messages, tools, signal) {
      const openAITools = tools.map(toOpenAITool);
      const rendered = await post(
        "apply-template",
        { messages, ...(openAITools.length > 0 && { tools: openAITools }) },
        signal,
      );
      if (!rendered.found) return countText(JSON.stringify({ messages, tools: openAITools }), signal);
      return countText(templateSchema.parse(rendered.json).prompt, signal);
    },
  };
}

/**
 * Where the harness sends a BFCL case: the model server directly, the proxy in front of the same
 * server (its Hono app in process: the routes, chat service and guardrails of `forge proxy`), or the guarded front half
 * in process (`runInference` with the proxy's `respond` tool, the prose policy and the parallel
 * follow-up). Each sends what BFCL's OpenAI FC handler sends — the history so far (a single-turn
 * case: its first turn's messages), the tools, temperature 0 and no `tool_choice` (auto) — and
 * answers in the FC handler's terms: the calls as `{name, arguments}` with arguments as JSON text,
 * else the text, and the assistant message the handler appends to the history for the next step.
 */
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { ContextManager, NoCompact } from "../../src/context/index.ts";
import { ToolCallError } from "../../src/core/errors.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { type JsonSchema, toolSpecFromJsonSchema } from "../../src/core/tools.ts";
import { runInference } from "../../src/loop/inference.ts";
import { callFormatFromTemplate, type TemplateCallFormat } from "../../src/prompts/chat-template.ts";
import { createHttpBackend, createProxy, type ProxyOptions } from "../../src/proxy/index.ts";
import { historyFromOpenAI } from "../../src/proxy/openai/request.ts";
import { openAIMessageSchema } from "../../src/proxy/openai/schema.ts";
import { RESPOND_TOOL_NAME, respondTool } from "../../src/tools/respond.ts";
import { serverCallFormat } from "../backends/call-format.ts";
import type { BfclCase } from "./cases.ts";

/**
 * The proxy's variants a run can take, by target name: `proxy` is `forge proxy` with its defaults;
 * the others turn one guardrail back to its earlier behaviour, for before/after figures.
 */
export const PROXY_VARIANTS = {
  proxy: {},
  /** Every text answer nudged, as before the prose policy. */
  "proxy-nudge": { prosePolicy: "nudge" },
  /** With the parallel follow-up (`--follow-up-max-calls 8`, off by default). */
  "proxy-parallel": { followUpMaxCalls: 8 },
  /** Without the call format read from the model's chat template (`--chat-template off`). */
  "proxy-no-template": { callFormat: null },
  /** With the call-confidence gate (`--call-confidence 0.5`, off by default; ADR 040). */
  "proxy-confidence": { callConfidence: 0.5 },
  /** With the gate and invented calls declined (`--call-confidence 0.5 --grounded-calls`; ADR 041). */
  "proxy-grounded": { callConfidence: 0.5, groundedCalls: true },
  /**
   * Question answering where a wrong call costs more than a missed one: invented calls declined
   * and the gate at 0.85 (`--call-confidence 0.85 --grounded-calls`; docs/eval.md "A stricter gate").
   */
  "proxy-strict": { callConfidence: 0.85, groundedCalls: true },
  /** Without the proxy's `respond` upstream where a text answer is taken (`--no-respond-upstream`; ADR 042). */
  "proxy-no-respond": { respondUpstream: false },
} as const satisfies Record<string, Partial<ProxyOptions>>;

/** The targets a run can take. */
export const BFCL_TARGETS = [
  "direct",
  ...(Object.keys(PROXY_VARIANTS) as (keyof typeof PROXY_VARIANTS)[]),
  "loop",
  "loop-parallel",
] as const;

/** A target's name. */
export type BfclTargetName = (typeof BFCL_TARGETS)[number];

/** A call as BFCL's FC handler records it. */
export interface BfclCall {
  name: string;
  /** JSON text. */
  arguments: string;
}

/** A chat message on the wire, as the FC handler keeps it in its history. */
export type BfclWireMessage = { role: string } & Record<string, unknown>;

/** What a target is asked: the history so far and the case's tools. */
export interface BfclRequest {
  messages: readonly BfclWireMessage[];
  tools: BfclCase["tools"];
}

/** What a target answered to one request, and what the guardrails did for it. */
export interface BfclAnswer {
  calls: BfclCall[];
  /** The id of each call, as the tool results that answer them carry (`tool_call_id`). */
  callIds: string[];
  /** The assistant message the FC handler appends to the history. */
  message: BfclWireMessage;
  text: string;
  /** LLM calls made (1 directly). */
  llmCalls: number;
  nudges: number;
  rescues: number;
  /** The proxy gave up: its answer is the model's prose after the nudges. */
  gaveUp: boolean;
  /** The answer was the model's text as it stood (the prose policy). */
  prose: boolean;
  /** Calls whose tool name was a near miss of an offered tool. */
  renamed: number;
  /** Rescued calls declined: by the call-confidence gate (ADR 040) or as invented (ADR 041). */
  declined: number;
  /** Of `declined`, the calls declined as invented (ADR 041). */
  ungrounded?: number;
  /** The model's probability of opening with a call, when the gate asked (ADR 040). */
  callConfidence?: number;
}

/** A started target. */
export interface BfclTarget {
  name: BfclTargetName;
  ask(request: BfclRequest, signal: AbortSignal): Promise<BfclAnswer>;
  close(): Promise<void>;
}

/** Where the model server is and how to ask it. */
export interface BfclServer {
  /** OpenAI-compatible base URL, e.g. `http://127.0.0.1:8080/v1`. */
  baseUrl: string;
  /** `model` sent with each request. */
  model: string;
  /** Sent with each request (BFCL sends `temperature`; the harness defaults it to 0). */
  temperature: number;
  /** `max_tokens` per LLM call, when set (the same for every target). */
  maxTokens?: number | undefined;
}

/** What a single-turn case asks: its first turn and its tools. */
export function firstTurnRequest(item: BfclCase): BfclRequest {
  return { messages: item.turns[0] ?? [], tools: item.tools };
}

/** The chat-completions body of a request, as BFCL's FC handler builds it. */
export function requestBody(request: BfclRequest, server: BfclServer): Record<string, unknown> {
  return {
    model: server.model,
    messages: request.messages,
    tools: request.tools,
    temperature: server.temperature,
    ...(server.maxTokens !== undefined && { max_tokens: server.maxTokens }),
  };
}

/** Start `name` in front of `server`. */
export async function startTarget(name: BfclTargetName, server: BfclServer): Promise<BfclTarget> {
  switch (name) {
    case "direct":
      return chatTarget("direct", `${server.baseUrl.replace(/\/+$/, "")}/chat/completions`, server);
    case "loop":
    case "loop-parallel":
      return loopTarget(name, server, await serverCallFormat(server.baseUrl));
    default: {
      // In process (`app.request`), so each request's access line is written before its answer
      // is read: the same Hono app, chat service and guardrails as `forge proxy`, without the socket.
      const records: AccessLine[] = [];
      const backend = createHttpBackend({ url: server.baseUrl });
      // As `forge proxy --chat-template auto`: the call format the server's chat template shows.
      const template = await backend.chatTemplate?.();
      const app = createProxy({
        callFormat: template ? callFormatFromTemplate(template) : null,
        ...PROXY_VARIANTS[name],
        backend,
        serialize: true,
        accessLog: { format: "json", write: (line) => records.push(JSON.parse(line) as AccessLine) },
      });
      return chatTarget(
        name,
        "/v1/chat/completions",
        server,
        async (url, init) => app.request(url, init),
        records,
      );
    }
  }
}

/** The access log's JSON line, as far as the harness reads it. */
interface AccessLine {
  retries: number;
  rescues: number;
  nudges: number;
  guardrail: string | null;
  prose?: number;
  renamed?: number;
  follow_up?: number;
  declined?: number;
  ungrounded?: number;
  confidence?: number | null;
}

function chatTarget(
  name: BfclTargetName,
  url: string,
  server: BfclServer,
  send: (url: string, init: RequestInit) => Promise<Response> = fetch,
  records?: AccessLine[],
): BfclTarget {
  return {
    name,
    async ask(request, signal) {
      const before = records?.length ?? 0;
      const response = await send(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(requestBody(request, server)),
        signal,
      });
      const body = (await response.json()) as ChatCompletion;
      const record = records && records.length > before ? records.at(-1) : undefined;
      if (!response.ok) {
        // A refusal (422 retries_exhausted) is the target's answer: no call.
        const message = body.error?.message ?? `HTTP ${response.status}`;
        if (response.status === 422) return textAnswer(record, message);
        throw new Error(`${name}: ${message}`);
      }
      const choice = body.choices?.[0]?.message;
      const wireCalls = choice?.tool_calls ?? [];
      return {
        ...emptyAnswer(record),
        calls: wireCalls.map((call) => ({ name: call.function.name, arguments: call.function.arguments })),
        // llama-server sends ids; a server that sends none gets the harness's, so each tool message answers its call.
        callIds: wireCalls.map((call, index) => call.id ?? `call_${index}`),
        text: choice?.content ?? "",
        // As the FC handler: the response's message, as it came.
        message: { role: "assistant", ...choice },
      };
    },
    async close() {},
  };
}

function textAnswer(record: AccessLine | undefined, text: string): BfclAnswer {
  return { ...emptyAnswer(record), text, message: { role: "assistant", content: text } };
}

function emptyAnswer(record: AccessLine | undefined): BfclAnswer {
  return {
    calls: [],
    callIds: [],
    message: { role: "assistant", content: "" },
    text: "",
    llmCalls: record ? record.retries + 1 : 1,
    nudges: record?.nudges ?? 0,
    rescues: record?.rescues ?? 0,
    gaveUp: record?.guardrail === "gave_up",
    prose: (record?.prose ?? 0) > 0,
    renamed: record?.renamed ?? 0,
    declined: record?.declined ?? 0,
    ungrounded: record?.ungrounded ?? 0,
    ...(typeof record?.confidence === "number" && { callConfidence: record.confidence }),
  };
}

interface ChatCompletion {
  choices?: {
    message?: {
      content?: string | null;
      tool_calls?: { id?: string; function: { name: string; arguments: string } }[];
    };
  }[];
  error?: { message?: string };
}

/**
 * The guarded front half in process, with the proxy's `respond` tool for a text answer;
 * `loop-parallel` with its follow-up for several calls in one answer (`followUpMaxCalls: 8`).
 */
function loopTarget(
  name: "loop" | "loop-parallel",
  server: BfclServer,
  callFormat: TemplateCallFormat | null,
): BfclTarget {
  const client = new OpenAICompatibleClient({
    baseUrl: server.baseUrl,
    model: server.model,
    temperature: server.temperature,
    ...(server.maxTokens !== undefined && { maxTokens: server.maxTokens }),
  });
  // Call ids for the history the next step sends back (the loop's calls carry none).
  let callCount = 0;
  return {
    name,
    async ask(request, signal) {
      const tools = [
        ...request.tools.map((tool) => {
          const fn = tool.function as { name: string; description?: string; parameters?: JsonSchema };
          return toolSpecFromJsonSchema(fn.name, fn.description ?? "", fn.parameters ?? { type: "object" });
        }),
        respondTool().spec,
      ];
      let llmCalls = 0;
      let nudges = 0;
      const observer = {
        onLLMCallStart: () => {
          llmCalls += 1;
        },
        onMessage: (message: Message) => {
          if (NUDGE_TYPES.has(message.metadata.type)) nudges += 1;
        },
      };
      try {
        const result = await runInference({
          client,
          contextManager: new ContextManager({ strategy: new NoCompact(), budgetTokens: 1_000_000 }),
          messages: historyFromOpenAI(request.messages.map((message) => openAIMessageSchema.parse(message))),
          tools,
          proseAnswerTool: RESPOND_TOOL_NAME,
          ...(callFormat && { callFormat }),
          ...(name === "loop-parallel" && { followUpMaxCalls: 8 }),
          observers: [observer],
          signal,
        });
        // The follow-up's steps are LLM calls the observer does not see.
        llmCalls += result.followUp?.steps ?? 0;
        const calls = result.toolCalls.filter((call) => call.tool !== RESPOND_TOOL_NAME);
        const text = result.toolCalls
          .filter((call) => call.tool === RESPOND_TOOL_NAME)
          .map((call) => String(call.args.message ?? ""))
          .join("\n\n");
        const answered = calls.map((call) => ({ name: call.tool, arguments: JSON.stringify(call.args) }));
        const callIds = answered.map((_, index) => `call_${callCount + index + 1}`);
        callCount += answered.length;
        return {
          calls: answered,
          callIds,
          text,
          message:
            answered.length > 0
              ? {
                  role: "assistant",
                  content: text,
                  tool_calls: answered.map((call, index) => ({
                    id: callIds[index],
                    type: "function",
                    function: call,
                  })),
                }
              : { role: "assistant", content: text },
          llmCalls,
          nudges,
          rescues: 0,
          gaveUp: false,
          prose: false,
          renamed: 0,
          declined: 0,
        };
      } catch (error) {
        if (!(error instanceof ToolCallError)) throw error;
        return {
          calls: [],
          callIds: [],
          text: error.rawResponse ?? "",
          message: { role: "assistant", content: error.rawResponse ?? "" },
          llmCalls,
          nudges,
          rescues: 0,
          gaveUp: true,
          prose: false,
          renamed: 0,
          declined: 0,
        };
      }
    },
    async close() {},
  };
}

const NUDGE_TYPES = new Set<string>([
  MessageType.RETRY_NUDGE,
  MessageType.STEP_NUDGE,
  MessageType.PREREQUISITE_NUDGE,
]);

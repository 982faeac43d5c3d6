/**
 * The sim-model server: an OpenAI-compatible chat-completions endpoint on 127.0.0.1 that plays
 * each scenario's reference solution and injects the faults of a seeded, named profile.
 * Stateless: the scenario, profile and seed come from the `model` field
 * (`sim/<profile>/<scenario>/<seed>`, or the system prompt and user message when the model
 * field names no scenario) and the position from the tool results in the history.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { renderSystemPrompt } from "../../src/core/workflow.ts";
import { ALL_SCENARIOS, type EvalScenario } from "../scenarios/index.ts";
import { DEFAULT_PROFILE, FAULT_PROFILES, type FaultKind, profileByName } from "./profiles.ts";
import { callsAsPromptText, fromPromptMode, isPromptModeRequest } from "./prompt-mode.ts";
import { planTurn, type SimTurn } from "./turn.ts";
import { type ChatRequest, chatRequestSchema, estimateWireTokens, parseSimModel, textOf } from "./wire.ts";

/** Options of `startSimModel`. */
export interface SimModelOptions {
  /** Default 127.0.0.1; the server never listens on other interfaces unless told to. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** Profile for requests whose model field names none. */
  profile?: string;
  /** Seed for requests whose model field names none. */
  seed?: number;
  /** Scenarios it can play (default: all). */
  scenarios?: readonly EvalScenario[];
  /** Added latency per request, to emulate a slow backend. */
  delayMs?: number;
  /** Reject requests whose history exceeds the scenario's budget, as a real server with that context would. */
  enforceContextWindow?: boolean;
}

/** Counters of what the server did. */
export interface SimModelStats {
  requests: number;
  faults: Partial<Record<FaultKind | "none", number>>;
  contextOverflows: number;
  badRequests: number;
}

/** A running sim-model. */
export interface SimModelServer {
  /** Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:41234/v1`. */
  url: string;
  port: number;
  stats: SimModelStats;
  close(): Promise<void>;
}

interface ScenarioEntry {
  scenario: EvalScenario;
  systemPrompt: string;
}

/**
 * Start a sim-model server.
 * @example
 * const sim = await startSimModel({ profile: "mixed" });
 * // POST `${sim.url}/chat/completions` with model "sim/mixed/basic_2step/1"
 * await sim.close();
 */
export async function startSimModel(options: SimModelOptions = {}): Promise<SimModelServer> {
  const defaultProfile = options.profile ?? DEFAULT_PROFILE;
  profileByName(defaultProfile);
  const entries: ScenarioEntry[] = (options.scenarios ?? ALL_SCENARIOS).map((scenario) => ({
    scenario,
    systemPrompt: renderSystemPrompt(scenario.build().workflow.systemPrompt),
  }));
  const stats: SimModelStats = { requests: 0, faults: {}, contextOverflows: 0, badRequests: 0 };
  const context: HandlerContext = {
    entries,
    defaultProfile,
    defaultSeed: options.seed ?? 0,
    delayMs: options.delayMs ?? 0,
    enforceContextWindow: options.enforceContextWindow ?? true,
    stats,
  };
  const server = createServer((request, response) => {
    handle(context, request, response).catch((error: unknown) => {
      sendJson(response, 500, { error: { message: String(error), type: "server_error" } });
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/v1`,
    port: address.port,
    stats,
    close: () => closeServer(server),
  };
}

interface HandlerContext {
  entries: ScenarioEntry[];
  defaultProfile: string;
  defaultSeed: number;
  delayMs: number;
  enforceContextWindow: boolean;
  stats: SimModelStats;
}

async function handle(context: HandlerContext, request: IncomingMessage, response: ServerResponse) {
  const path = (request.url ?? "/").split("?")[0];
  if (request.method === "GET" && (path === "/health" || path === "/v1/health")) {
    return sendJson(response, 200, { status: "ok" });
  }
  if (request.method === "GET" && path === "/v1/models") {
    return sendJson(response, 200, {
      object: "list",
      data: Object.keys(FAULT_PROFILES).map((profile) => ({
        id: `sim/${profile}`,
        object: "model",
        owned_by: "forge-eval",
      })),
    });
  }
  if (request.method === "GET" && path === "/v1/sim/stats") return sendJson(response, 200, context.stats);
  if (request.method !== "POST" || path !== "/v1/chat/completions") {
    return sendJson(response, 404, {
      error: { message: `No route ${request.method} ${path}`, type: "not_found" },
    });
  }
  let body: unknown;
  try {
    body = JSON.parse(await readBody(request));
  } catch {
    context.stats.badRequests += 1;
    return sendJson(response, 400, { error: { message: "Body is not JSON", type: "invalid_request_error" } });
  }
  const parsed = chatRequestSchema.safeParse(body);
  if (!parsed.success) {
    context.stats.badRequests += 1;
    return sendJson(response, 400, {
      error: { message: parsed.error.message, type: "invalid_request_error" },
    });
  }
  const chat = parsed.data;
  const route = parseSimModel(chat.model);
  const entry = route.scenario
    ? context.entries.find((candidate) => candidate.scenario.id === route.scenario)
    : findByPrompt(context.entries, chat);
  if (!entry) {
    context.stats.badRequests += 1;
    const valid = context.entries.map((candidate) => candidate.scenario.id).join(", ");
    return sendJson(response, 404, {
      error: {
        message: `No scenario for model '${chat.model}'. Use model "sim/<profile>/<scenario>/<seed>"; scenarios: ${valid}`,
        type: "not_found",
      },
    });
  }
  const profileName = route.profile ?? context.defaultProfile;
  const profile = FAULT_PROFILES[profileName];
  if (!profile) {
    context.stats.badRequests += 1;
    return sendJson(response, 404, {
      error: {
        message: `Unknown profile '${profileName}'; profiles: ${Object.keys(FAULT_PROFILES).join(", ")}`,
        type: "not_found",
      },
    });
  }
  context.stats.requests += 1;
  if (context.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, context.delayMs));
  const promptTokens = estimateWireTokens(chat.messages);
  const window = entry.scenario.budgetTokens;
  if (context.enforceContextWindow && promptTokens > window) {
    context.stats.contextOverflows += 1;
    return sendJson(response, 400, {
      error: {
        code: 400,
        message: `the request exceeds the available context size (n_prompt_tokens=${promptTokens}, n_ctx=${window})`,
        type: "exceed_context_size_error",
        n_prompt_tokens: promptTokens,
        n_ctx: window,
      },
    });
  }
  // Prompt mode: no `tools`, the tool prompt in the system message; calls answered as its JSON.
  const promptMode = isPromptModeRequest(chat.tools, chat.messages);
  const planned = planTurn({
    scenarioId: entry.scenario.id,
    reference: entry.scenario.reference,
    profile,
    seed: route.seed ?? context.defaultSeed,
    messages: promptMode ? fromPromptMode(chat.messages) : chat.messages,
    toolNames: promptMode ? entry.scenario.reference.map((step) => step.tool) : toolNamesOf(chat.tools),
  });
  const turn: SimTurn =
    promptMode && planned.kind === "calls"
      ? { kind: "text", content: callsAsPromptText(planned.calls), fault: planned.fault, step: planned.step }
      : planned;
  const faultKey = turn.fault ?? "none";
  context.stats.faults[faultKey] = (context.stats.faults[faultKey] ?? 0) + 1;
  response.setHeader("x-sim-fault", faultKey);
  response.setHeader("x-sim-step", String(turn.step));
  const completionTokens = Math.ceil(JSON.stringify(turn).length / 4);
  if (chat.stream) return streamTurn(response, chat.model, turn, promptTokens, completionTokens);
  return sendJson(response, 200, completion(chat.model, turn, promptTokens, completionTokens));
}

function findByPrompt(entries: readonly ScenarioEntry[], chat: ChatRequest): ScenarioEntry | undefined {
  const system = chat.messages.find((message) => message.role === "system");
  const user = chat.messages.find((message) => message.role === "user");
  if (!system || !user) return undefined;
  return entries.find(
    (entry) => entry.systemPrompt === textOf(system) && entry.scenario.userMessage === textOf(user),
  );
}

function toolNamesOf(tools: readonly unknown[] | undefined): string[] {
  return (tools ?? [])
    .map((tool) => (tool as { function?: { name?: unknown } }).function?.name)
    .filter((name): name is string => typeof name === "string");
}

function wireToolCalls(turn: SimTurn) {
  if (turn.kind !== "calls") return undefined;
  return turn.calls.map((call, index) => ({
    id: `call_${turn.step}_${index}_${Math.abs(call.name.length * 7919 + index) % 10000}`,
    type: "function",
    function: { name: call.name, arguments: JSON.stringify(call.arguments) },
  }));
}

function completion(model: string, turn: SimTurn, promptTokens: number, completionTokens: number) {
  const toolCalls = wireToolCalls(turn);
  return {
    id: `chatcmpl-sim-${Date.now().toString(36)}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: turn.content, ...(toolCalls && { tool_calls: toolCalls }) },
        finish_reason: toolCalls ? "tool_calls" : "stop",
      },
    ],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
  };
}

function streamTurn(
  response: ServerResponse,
  model: string,
  turn: SimTurn,
  promptTokens: number,
  completionTokens: number,
) {
  response.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const id = `chatcmpl-sim-${Date.now().toString(36)}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (
    delta: Record<string, unknown>,
    finish: string | null,
    extra: Record<string, unknown> = {},
  ) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  response.write(chunk({ role: "assistant", content: "" }, null));
  const content = turn.content ?? "";
  for (let start = 0; start < content.length; start += 24) {
    response.write(chunk({ content: content.slice(start, start + 24) }, null));
  }
  const toolCalls = wireToolCalls(turn);
  toolCalls?.forEach((call, index) => {
    response.write(
      chunk(
        {
          tool_calls: [
            { index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } },
          ],
        },
        null,
      ),
    );
    response.write(
      chunk({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] }, null),
    );
  });
  response.write(
    chunk({}, toolCalls ? "tool_calls" : "stop", {
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    }),
  );
  response.end("data: [DONE]\n\n");
}

function sendJson(response: ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeAllConnections();
  });
}

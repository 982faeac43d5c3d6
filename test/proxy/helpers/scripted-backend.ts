/**
 * A scripted OpenAI chat-completions server on 127.0.0.1 (node:http): each POST to
 * `/v1/chat/completions` takes the next scripted reply, every request is recorded, and leftover
 * or unexpected calls fail the test. Also answers `/v1/models`, `/props` and `/health`.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the backend received. */
export interface BackendRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body (POST). */
  body: Record<string, unknown>;
}

/** What the backend answers. `body` objects are sent as JSON; strings as-is. */
export interface BackendReply {
  status?: number;
  body?: unknown;
  contentType?: string;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Never answer (until the client goes away). */
  hang?: boolean;
  /** Stream these pieces as an event stream, each written as it comes (`body` is ignored). */
  pieces?: AsyncIterable<string>;
}

/** A scripted step: a reply, or a function of the request computing one. */
export type BackendStep = BackendReply | ((request: BackendRequest) => BackendReply | Promise<BackendReply>);

/** A running scripted backend. */
export interface ScriptedBackend {
  url: string;
  requests: BackendRequest[];
  /** Chat requests only. */
  readonly chatRequests: BackendRequest[];
  /** Requests whose connection the client closed before the answer. */
  readonly aborted: number;
  push(...steps: BackendStep[]): void;
  /** Unused scripted steps. */
  readonly remaining: number;
  /** Throws unless every step was used and no unexpected call came in. */
  assertDone(): void;
  close(): Promise<void>;
}

/** Options of `startScriptedBackend`. */
export interface ScriptedBackendOptions {
  /** Answer every chat request with this instead of failing when the script is empty. */
  fallback?: BackendStep;
  /** `n_ctx` reported by `/props` (default 4096). */
  contextLength?: number;
  /**
   * Answer llama-server's `POST /apply-template` and `POST /tokenize` (default: 404, as a server
   * without a tokenizer): the template is {@link scriptedTemplate}, a token every five characters.
   */
  tokenizer?: boolean;
}

/** The prompt the scripted `/apply-template` renders: each message's role and content, then the tools' JSON. */
export function scriptedTemplate(body: Record<string, unknown>): string {
  const messages = (body.messages ?? []) as { role?: unknown; content?: unknown }[];
  const turns = messages.map(
    (message) => `<|${String(message.role)}|>${JSON.stringify(message.content ?? "")}`,
  );
  return `${turns.join("\n")}${body.tools ? `\n<|tools|>${JSON.stringify(body.tools)}` : ""}`;
}

/** The tokens the scripted `/tokenize` counts in a text: one per five characters. */
export function scriptedTokenCount(text: string): number {
  return Math.ceil(text.length / 5);
}

/** Start the backend on 127.0.0.1 with a free port. */
export async function startScriptedBackend(
  script: BackendStep[] = [],
  options: ScriptedBackendOptions = {},
): Promise<ScriptedBackend> {
  const steps = [...script];
  const requests: BackendRequest[] = [];
  const unexpected: string[] = [];
  let aborted = 0;
  const server: Server = createServer(async (incoming, outgoing) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const path = (incoming.url ?? "/").split("?")[0] ?? "/";
    const request: BackendRequest = {
      method: incoming.method ?? "GET",
      path,
      headers: incoming.headers,
      body: raw.length > 0 ? (JSON.parse(raw) as Record<string, unknown>) : {},
    };
    requests.push(request);
    let reply: BackendReply;
    if (request.method === "POST" && path === "/v1/chat/completions") {
      const step = steps.shift() ?? options.fallback;
      if (step === undefined) {
        unexpected.push(`unexpected chat request #${requests.length}`);
        reply = { status: 500, body: { error: { message: "scripted backend: script exhausted" } } };
      } else {
        reply = typeof step === "function" ? await step(request) : step;
      }
    } else if (path === "/v1/models") {
      reply = {
        body: { object: "list", data: [{ id: "scripted-model", object: "model", owned_by: "test" }] },
      };
    } else if (path === "/props") {
      reply = { body: { default_generation_settings: { n_ctx: options.contextLength ?? 4096 } } };
    } else if (options.tokenizer && request.method === "POST" && path === "/apply-template") {
      reply = { body: { prompt: scriptedTemplate(request.body) } };
    } else if (options.tokenizer && request.method === "POST" && path === "/tokenize") {
      const content = typeof request.body.content === "string" ? request.body.content : "";
      reply = { body: { tokens: new Array(scriptedTokenCount(content)).fill(1) } };
    } else if (path === "/health") {
      reply = { body: { status: "ok" } };
    } else {
      reply = { status: 404, body: { error: { message: `no route ${path}` } } };
    }
    if (reply.hang) {
      outgoing.on("close", () => aborted++);
      return;
    }
    if (reply.delayMs) {
      const closed = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), reply.delayMs);
        outgoing.on("close", () => {
          clearTimeout(timer);
          resolve(!outgoing.writableFinished);
        });
      });
      if (closed) {
        aborted++;
        return;
      }
    }
    if (reply.pieces) {
      outgoing.writeHead(reply.status ?? 200, { "content-type": "text/event-stream" });
      for await (const piece of reply.pieces) {
        if (outgoing.destroyed) break;
        outgoing.write(piece);
      }
      outgoing.end();
      return;
    }
    const body = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body ?? {});
    outgoing.writeHead(reply.status ?? 200, {
      "content-type":
        reply.contentType ?? (typeof reply.body === "string" ? "text/plain" : "application/json"),
    });
    outgoing.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get chatRequests() {
      return requests.filter((request) => request.path === "/v1/chat/completions");
    },
    get aborted() {
      return aborted;
    },
    push: (...more) => steps.push(...more),
    get remaining() {
      return steps.length;
    },
    assertDone() {
      if (steps.length > 0) throw new Error(`scripted backend: ${steps.length} unused step(s)`);
      if (unexpected.length > 0) throw new Error(`scripted backend: ${unexpected.join("; ")}`);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let completionCount = 0;

/** A `chat.completion` whose message says `content` (prose, fenced JSON, `<tool_call>` text, …). */
export function textCompletion(content: string, model = "scripted-model"): BackendReply {
  return { body: completionBody({ role: "assistant", content }, "stop", model) };
}

/** A `chat.completion` with native `tool_calls`. */
export function toolCallCompletion(
  calls: { name: string; args: Record<string, unknown> | string }[],
  content: string | null = null,
): BackendReply {
  const toolCalls = calls.map((call, index) => ({
    id: `call_backend_${index}`,
    type: "function",
    function: {
      name: call.name,
      arguments: typeof call.args === "string" ? call.args : JSON.stringify(call.args),
    },
  }));
  return { body: completionBody({ role: "assistant", content, tool_calls: toolCalls }, "tool_calls") };
}

/** A streamed answer (SSE chunks and `[DONE]`) for requests forwarded with `stream: true`. */
export function streamedTextCompletion(parts: string[]): BackendReply {
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({
      id: "chatcmpl-stream",
      object: "chat.completion.chunk",
      created: 0,
      model: "scripted-model",
      choices: [{ index: 0, delta, finish_reason: finish }],
    })}\n\n`;
  const body =
    chunk({ role: "assistant", content: "" }, null) +
    parts.map((part) => chunk({ content: part }, null)).join("") +
    chunk({}, "stop") +
    "data: [DONE]\n\n";
  return { body, contentType: "text/event-stream" };
}

function completionBody(message: Record<string, unknown>, finishReason: string, model = "scripted-model") {
  completionCount++;
  return {
    id: `chatcmpl-backend-${completionCount}`,
    object: "chat.completion",
    created: 0,
    model,
    choices: [{ index: 0, message, finish_reason: finishReason }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

/** One `chat.completion.chunk` event with `delta` (and a finish reason on the last). */
export function chunkEvent(delta: Record<string, unknown>, finish: string | null = null): string {
  const chunk = {
    id: "chatcmpl-live",
    object: "chat.completion.chunk",
    created: 0,
    model: "scripted-model",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/**
 * A streamed answer whose pieces are written one by one: text pieces as content deltas, a
 * promise as a pause until it settles, then the finish reason and `[DONE]`.
 */
export async function* streamedPieces(
  parts: (string | Promise<unknown> | Record<string, unknown>)[],
  finish = "stop",
): AsyncIterable<string> {
  yield chunkEvent({ role: "assistant", content: "" });
  for (const part of parts) {
    if (typeof part === "string") yield chunkEvent({ content: part });
    else if (part instanceof Promise) await part;
    else yield chunkEvent(part);
  }
  yield chunkEvent({}, finish);
  yield "data: [DONE]\n\n";
}

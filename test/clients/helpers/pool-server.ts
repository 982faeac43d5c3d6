/**
 * A llama-server stand-in for the pool tests: a real node:http server on 127.0.0.1 that answers
 * GET /health, GET /props (`total_slots`) and POST /v1/chat/completions in the OpenAI shape (text
 * streams too), counts
 * the chat requests it holds at once, records each request's label (the last user message), and
 * can hold requests until the test lets them go, drop a connection, stop and restart on its port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** Options of {@link startPoolServer}. */
export interface PoolServerOptions {
  /** `total_slots` in /props; null: /props leaves it out. Default 2. */
  totalSlots?: number | null;
  /** Hold every chat request until `releaseAll()` / `release()` (default false: answer at once). */
  hold?: boolean;
  /** GET /health never answers (a wedged server). */
  hangHealth?: boolean;
  /** `n_ctx` in /props. Default 4096. */
  nCtx?: number;
  /** Answer a chat request after this many ms (default 0). */
  delayMs?: number;
  /** Chat requests without `Authorization: Bearer <apiKey>` get 401, as llama-server's `--api-key`. */
  apiKey?: string;
  /** The assistant message for a request (default: the text `answer to <label>`). */
  reply?: (request: { messages: Record<string, unknown>[] }) => Record<string, unknown>;
}

/** A running stand-in. */
export interface PoolServer {
  /** `http://127.0.0.1:<port>` (no `/v1`). */
  url: string;
  port: number;
  /** Labels of the chat requests received, in arrival order. */
  readonly received: string[];
  /** Chat requests held or being answered now. */
  readonly current: number;
  /** The most chat requests it held at once. */
  readonly maxConcurrent: number;
  /** Requests waiting to be let go (with `hold`). */
  readonly held: number;
  /** Let the oldest held request go. */
  release(): void;
  /** Let every held request go, and answer later ones at once. */
  releaseAll(): void;
  /** Destroy the connection of the next chat request instead of answering it. */
  dropNext(): void;
  /** Close the server and every connection (held requests die with it). */
  stop(): Promise<void>;
  /** Listen again on the same port. */
  restart(): Promise<void>;
}

/** The label of a request: its last user message's content. */
function labelOf(body: string): string {
  const parsed = JSON.parse(body) as { messages: { role: string; content: unknown }[] };
  const users = parsed.messages.filter((message) => message.role === "user");
  return String(users.at(-1)?.content ?? "");
}

/**
 * Start a stand-in on a free port.
 * @example
 * const server = await startPoolServer({ totalSlots: 2, hold: true });
 * await server.stop();
 */
export async function startPoolServer(options: PoolServerOptions = {}): Promise<PoolServer> {
  const totalSlots = options.totalSlots === undefined ? 2 : options.totalSlots;
  const received: string[] = [];
  const waiting: (() => void)[] = [];
  let hold = options.hold ?? false;
  let drop = 0;
  let current = 0;
  let maxConcurrent = 0;
  let server: Server;
  let port = 0;

  const answer = (
    response: ServerResponse,
    label: string,
    request: { messages: Record<string, unknown>[]; stream?: boolean },
  ) => {
    if (request.stream) {
      // Text only: one content delta, the finish, [DONE].
      const chunk = (delta: Record<string, unknown>, finish: string | null) =>
        `data: ${JSON.stringify({ id: "chatcmpl-pool", object: "chat.completion.chunk", created: 0, model: "pool", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(chunk({ role: "assistant", content: `answer to ${label}` }, null));
      response.end(`${chunk({}, "stop")}data: [DONE]\n\n`);
      return;
    }
    const message = options.reply?.(request) ?? { role: "assistant", content: `answer to ${label}` };
    const body = JSON.stringify({
      id: "chatcmpl-pool",
      object: "chat.completion",
      created: 0,
      model: "pool",
      choices: [
        {
          index: 0,
          message,
          finish_reason: message.tool_calls ? "tool_calls" : "stop",
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
    });
    response.writeHead(200, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
    });
    response.end(body);
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? "/").split("?")[0];
    if (request.method === "GET" && path === "/health") {
      if (options.hangHealth) return;
      response.writeHead(200, { "content-type": "application/json" });
      return response.end('{"status":"ok"}');
    }
    if (request.method === "GET" && path === "/props") {
      response.writeHead(200, { "content-type": "application/json" });
      return response.end(
        JSON.stringify({
          default_generation_settings: { n_ctx: options.nCtx ?? 4096 },
          ...(totalSlots !== null && { total_slots: totalSlots }),
        }),
      );
    }
    if (request.method !== "POST" || path !== "/v1/chat/completions") {
      response.writeHead(404);
      return response.end();
    }
    if (options.apiKey !== undefined && request.headers.authorization !== `Bearer ${options.apiKey}`) {
      response.writeHead(401, { "content-type": "application/json" });
      return response.end('{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}');
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const label = labelOf(text);
    received.push(label);
    if (drop > 0) {
      drop -= 1;
      request.socket.destroy();
      return;
    }
    current += 1;
    maxConcurrent = Math.max(maxConcurrent, current);
    try {
      if (hold) await new Promise<void>((resolve) => waiting.push(resolve));
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
    } finally {
      current -= 1;
    }
    if (!response.destroyed) answer(response, label, JSON.parse(text));
  };

  const listen = async () => {
    server = createServer((request, response) => {
      handle(request, response).catch(() => response.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    port = (server.address() as AddressInfo).port;
  };
  await listen();

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    get current() {
      return current;
    },
    get maxConcurrent() {
      return maxConcurrent;
    },
    get held() {
      return waiting.length;
    },
    release() {
      waiting.shift()?.();
    },
    releaseAll() {
      hold = false;
      for (const resolve of waiting.splice(0)) resolve();
    },
    dropNext() {
      drop += 1;
    },
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      // Held requests of a stopped server never answer: their connections are gone.
      for (const resolve of waiting.splice(0)) resolve();
    },
    restart: listen,
  };
}

/**
 * A real HTTP server on 127.0.0.1 (random port) that answers each route with scripted replies, in
 * order: JSON, raw bodies, SSE or NDJSON streams (optionally paced, cut off or left hanging),
 * slow answers, hung requests and dropped connections. It records every request and fails loudly
 * on a request it has no reply for.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the server received. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  json: unknown;
  /** Settles when the exchange is over: the response ended or the client closed the connection. */
  closed: Promise<void>;
}

/** How a streamed reply ends: a clean end, a silent hang, or a dropped connection. */
export type StreamEnd = "close" | "hang" | "drop";

/** A scripted reply. */
export type Reply =
  | {
      kind: "body";
      status: number;
      contentType: string;
      body: string;
      delayMs: number;
      headers?: Record<string, string>;
    }
  | {
      kind: "stream";
      status: number;
      contentType: string;
      frames: string[];
      intervalMs: number;
      end: StreamEnd;
    }
  | { kind: "hang" }
  | { kind: "drop" }
  | { kind: "dynamic"; reply: (request: RecordedRequest) => Reply };

/** A JSON reply. */
export function json(body: unknown, options: { status?: number; delayMs?: number } = {}): Reply {
  return {
    kind: "body",
    status: options.status ?? 200,
    contentType: "application/json",
    body: JSON.stringify(body),
    delayMs: options.delayMs ?? 0,
  };
}

/** A reply whose body is sent exactly as given (malformed JSON, plain-text errors, …). */
export function raw(
  body: string,
  options: { status?: number; contentType?: string; delayMs?: number; headers?: Record<string, string> } = {},
): Reply {
  return {
    kind: "body",
    status: options.status ?? 200,
    contentType: options.contentType ?? "text/plain",
    body,
    delayMs: options.delayMs ?? 0,
    ...(options.headers ? { headers: options.headers } : {}),
  };
}

/** Stream options: pause between frames, and how the stream ends. */
export interface StreamOptions {
  intervalMs?: number;
  end?: StreamEnd;
  status?: number;
}

/** An SSE reply: each event is a `data:` line (objects are JSON-encoded) followed by a blank line. */
export function sse(events: (string | object)[], options: StreamOptions = {}): Reply {
  const frames = events.map(
    (event) => `data: ${typeof event === "string" ? event : JSON.stringify(event)}\n\n`,
  );
  return stream(frames, "text/event-stream", options);
}

/** An SSE reply from a captured event stream (`event:`/`data:` lines), sent one event per frame. */
export function sseText(text: string, options: StreamOptions = {}): Reply {
  const frames = text
    .split(/\n\n+/)
    .filter((frame) => frame.trim().length > 0)
    .map((frame) => `${frame}\n\n`);
  return stream(frames, "text/event-stream", options);
}

/** An NDJSON reply: one JSON value per line (strings are sent as they are). */
export function ndjson(lines: (string | object)[], options: StreamOptions = {}): Reply {
  const frames = lines.map((line) => `${typeof line === "string" ? line : JSON.stringify(line)}\n`);
  return stream(frames, "application/x-ndjson", options);
}

function stream(frames: string[], contentType: string, options: StreamOptions): Reply {
  return {
    kind: "stream",
    status: options.status ?? 200,
    contentType,
    frames,
    intervalMs: options.intervalMs ?? 0,
    end: options.end ?? "close",
  };
}

/** Never answer (the client must time out or abort). */
export function hang(): Reply {
  return { kind: "hang" };
}

/** Destroy the connection without answering. */
export function drop(): Reply {
  return { kind: "drop" };
}

/** A reply computed from the request. */
export function dynamic(reply: (request: RecordedRequest) => Reply): Reply {
  return { kind: "dynamic", reply };
}

/** The text of a file under `test/fixtures/`. */
export function fixture(path: string): string {
  return readFileSync(new URL(`../../fixtures/${path}`, import.meta.url), "utf8");
}

/** The replay server. Routes are `"<METHOD> <path>"`, e.g. `"POST /v1/chat/completions"`. */
export class ReplayServer {
  readonly requests: RecordedRequest[] = [];
  /** TCP connections clients opened (a client that reuses its connection opens one). */
  connections = 0;
  /** Requests that had no scripted reply. */
  readonly unexpected: string[] = [];
  readonly #server: Server;
  readonly #replies = new Map<string, Reply[]>();

  private constructor(server: Server) {
    this.#server = server;
  }

  /** Start a server on 127.0.0.1 with a random free port. */
  static async start(): Promise<ReplayServer> {
    const server = createServer();
    const replay = new ReplayServer(server);
    server.on("connection", () => {
      replay.connections += 1;
    });
    server.on("request", (request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const recorded: RecordedRequest = {
          method: request.method ?? "GET",
          path: request.url ?? "/",
          headers: request.headers,
          body,
          json: parseJson(body),
          closed: new Promise((resolve) => response.on("close", () => resolve())),
        };
        void replay.#answer(recorded, response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return replay;
  }

  /** `http://127.0.0.1:<port>` */
  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Queue replies for a route, answered in order. */
  reply(route: string, ...replies: Reply[]): this {
    const queue = this.#replies.get(route) ?? [];
    queue.push(...replies);
    this.#replies.set(route, queue);
    return this;
  }

  /** The recorded requests to one route. */
  requestsTo(route: string): RecordedRequest[] {
    return this.requests.filter((request) => `${request.method} ${request.path}` === route);
  }

  /** The JSON body of the only request to `route`, or of its `index`-th one. */
  bodyOf(route: string, index = 0): Record<string, unknown> {
    const request = this.requestsTo(route)[index];
    if (!request) throw new Error(`replay-server: no request #${index} to ${route}`);
    return request.json as Record<string, unknown>;
  }

  /** Throws when a request was unexpected or a scripted reply was never used. */
  assertDone(): void {
    const leftover = [...this.#replies].filter(([, queue]) => queue.length > 0).map(([route]) => route);
    if (this.unexpected.length > 0 || leftover.length > 0) {
      throw new Error(
        `replay-server: unexpected requests [${this.unexpected.join(", ")}], unused replies for [${leftover.join(", ")}]`,
      );
    }
  }

  /** Stop the server, dropping hung connections. */
  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #answer(request: RecordedRequest, response: ServerResponse): Promise<void> {
    this.requests.push(request);
    const route = `${request.method} ${request.path}`;
    let reply = this.#replies.get(route)?.shift();
    if (!reply) {
      this.unexpected.push(route);
      response.writeHead(599, { "content-type": "text/plain" });
      response.end(`replay-server: no reply scripted for ${route}`);
      return;
    }
    while (reply.kind === "dynamic") reply = reply.reply(request);
    switch (reply.kind) {
      case "hang":
        return;
      case "drop":
        response.socket?.destroy();
        return;
      case "body":
        await sleep(reply.delayMs);
        response.writeHead(reply.status, { ...reply.headers, "content-type": reply.contentType });
        response.end(reply.body);
        return;
      case "stream":
        response.writeHead(reply.status, { "content-type": reply.contentType, "cache-control": "no-cache" });
        response.flushHeaders();
        for (const frame of reply.frames) {
          if (response.destroyed) return;
          response.write(frame);
          await sleep(reply.intervalMs);
        }
        if (reply.end === "close") response.end();
        // Give the frames time to leave before the socket goes.
        else if (reply.end === "drop") setTimeout(() => response.socket?.destroy(), 20);
        return;
    }
  }
}

/** A port on 127.0.0.1 with nothing listening (for connection-refused tests). */
export async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/**
 * An OpenAI-compatible backend on 127.0.0.1 (node:http) that misbehaves on purpose: each POST to
 * `/v1/chat/completions` takes the next scripted behaviour (stall mid-body, trickle a stream
 * forever, send hundreds of megabytes, wait for the test's go-ahead, or answer normally).
 * `/health`, `/props` and `/v1/models` answer at once. It records how each chat connection ended.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { BackendReply } from "./scripted-backend.ts";

/** What the backend does with one chat request. */
export type Behaviour = (incoming: IncomingMessage, outgoing: ServerResponse) => void | Promise<void>;

/** A running misbehaving backend. */
export interface MisbehavingBackend {
  url: string;
  /** Chat requests received so far. */
  readonly chatRequests: number;
  /** Chat connections the proxy closed before the backend finished its answer. */
  readonly cutByProxy: number;
  /** Bytes written in answers the proxy cut. */
  readonly bytesWritten: number;
  push(...behaviours: Behaviour[]): void;
  /** Resolves once `count` chat requests have arrived. */
  received(count: number): Promise<void>;
  /** Resolves once the proxy has cut `count` chat connections (the test times out otherwise). */
  cut(count: number): Promise<void>;
  close(): Promise<void>;
}

/** Start the backend; chat requests beyond the script fail the test with a 500. */
export async function startMisbehavingBackend(script: Behaviour[] = []): Promise<MisbehavingBackend> {
  const steps = [...script];
  let chatRequests = 0;
  let cutByProxy = 0;
  let bytesWritten = 0;
  const waiters: { count: number; resolve: () => void }[] = [];
  const cutWaiters: { count: number; resolve: () => void }[] = [];
  const server = createServer(async (incoming, outgoing) => {
    for await (const _chunk of incoming) {
      // The body is read and dropped: behaviours decide by their place in the script.
    }
    const path = (incoming.url ?? "/").split("?")[0];
    if (incoming.method === "POST" && path === "/v1/chat/completions") {
      chatRequests += 1;
      for (const waiter of waiters.filter((entry) => entry.count <= chatRequests)) waiter.resolve();
      const wrote = outgoing.write.bind(outgoing);
      outgoing.write = ((chunk: Buffer | string, ...rest: never[]) => {
        bytesWritten += typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
        return wrote(chunk, ...rest);
      }) as typeof outgoing.write;
      outgoing.once("close", () => {
        if (outgoing.writableFinished) return;
        cutByProxy += 1;
        for (const waiter of cutWaiters.filter((entry) => entry.count <= cutByProxy)) waiter.resolve();
      });
      const behaviour =
        steps.shift() ?? reply({ status: 500, body: { error: { message: "script exhausted" } } });
      await behaviour(incoming, outgoing);
      return;
    }
    const bodies: Record<string, unknown> = {
      "/health": { status: "ok" },
      "/props": { default_generation_settings: { n_ctx: 4096 } },
      "/v1/models": { object: "list", data: [{ id: "misbehaving", object: "model", owned_by: "test" }] },
    };
    const body = path === undefined ? undefined : bodies[path];
    outgoing.writeHead(body ? 200 : 404, { "content-type": "application/json" });
    outgoing.end(JSON.stringify(body ?? { error: { message: `no route ${path}` } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get chatRequests() {
      return chatRequests;
    },
    get cutByProxy() {
      return cutByProxy;
    },
    get bytesWritten() {
      return bytesWritten;
    },
    push: (...more) => steps.push(...more),
    received: (count) =>
      count <= chatRequests
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ count, resolve })),
    cut: (count) =>
      count <= cutByProxy
        ? Promise.resolve()
        : new Promise<void>((resolve) => cutWaiters.push({ count, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answer normally with a scripted reply (see `scripted-backend.ts`'s builders). */
export function reply(answer: BackendReply): Behaviour {
  return (_incoming, outgoing) => {
    const body = typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body ?? {});
    outgoing.writeHead(answer.status ?? 200, {
      "content-type":
        answer.contentType ?? (typeof answer.body === "string" ? "text/plain" : "application/json"),
    });
    outgoing.end(body);
  };
}

/** Send the headers and `part` of the body, then nothing more (the connection stays open). */
export function stallAfter(part: string, contentType = "application/json"): Behaviour {
  return (_incoming, outgoing) => {
    outgoing.writeHead(200, { "content-type": contentType });
    outgoing.write(part);
  };
}

/** An SSE stream that sends a chunk every `everyMs` and never ends: never idle, never done. */
export function trickleForever(everyMs: number): Behaviour {
  return (_incoming, outgoing) => {
    outgoing.writeHead(200, { "content-type": "text/event-stream" });
    const timer = setInterval(() => outgoing.write(sseChunk("tick ")), everyMs);
    outgoing.once("close", () => clearInterval(timer));
  };
}

/**
 * `totalBytes` of a JSON answer, written a MiB at a time as fast as the connection takes it (or
 * with its `content-length` declared up front), stopping when the proxy hangs up.
 */
export function hugeAnswer(
  totalBytes: number,
  options: { declareLength?: boolean; contentType?: string } = {},
): Behaviour {
  return async (_incoming, outgoing) => {
    outgoing.writeHead(200, {
      "content-type": options.contentType ?? "application/json",
      ...(options.declareLength && { "content-length": totalBytes }),
    });
    const piece = Buffer.alloc(1024 * 1024, "a");
    let closed = false;
    let wake = () => {};
    outgoing.once("close", () => {
      closed = true;
      wake();
    });
    outgoing.on("drain", () => wake());
    for (let sent = 0; sent < totalBytes && !closed; sent += piece.length) {
      if (!outgoing.write(piece)) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    }
    if (!closed) outgoing.end();
  };
}

/** Wait for `go` before answering with `answer`. */
export function answerWhen(go: Promise<void>, answer: BackendReply): Behaviour {
  const send = reply(answer);
  return async (incoming, outgoing) => {
    await go;
    if (!outgoing.destroyed) await send(incoming, outgoing);
  };
}

/** One `chat.completion.chunk` event carrying `content`. */
export function sseChunk(content: string): string {
  return `data: ${JSON.stringify({
    id: "chatcmpl-misbehaving",
    object: "chat.completion.chunk",
    created: 0,
    model: "misbehaving",
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  })}\n\n`;
}

/** A promise and the function that resolves it. */
export function gate(): { go: Promise<void>; open: () => void } {
  let open = () => {};
  const go = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { go, open };
}

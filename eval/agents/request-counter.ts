/**
 * A byte-for-byte pass-through in front of the model server that counts the LLM requests (POSTs)
 * it forwards: the direct arm's turns, and in the proxy arm the calls the proxy made (nudged
 * retries included). It reads and changes nothing, so the direct arm stays direct.
 */
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A running counter. */
export interface RequestCounter {
  /** `http://127.0.0.1:<port>`, to use in place of the server's origin. */
  url: string;
  /** POST requests forwarded since the last `reset()`. */
  posts(): number;
  /** Of those, the ones whose answer was sent in full. */
  answered(): number;
  reset(): void;
  close(): Promise<void>;
}

/** Start a counter in front of `upstream` (an origin, `http://host:port`). */
export async function startRequestCounter(upstream: string): Promise<RequestCounter> {
  const target = new URL(upstream);
  let posts = 0;
  let answered = 0;
  const server: Server = createServer((incoming, outgoing) => {
    const post = incoming.method === "POST";
    if (post) posts += 1;
    const forwarded = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, host: target.host },
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        outgoing.on("finish", () => {
          if (post) answered += 1;
        });
        answer.pipe(outgoing);
      },
    );
    forwarded.on("error", (error) => {
      if (!outgoing.headersSent) outgoing.writeHead(502, { "content-type": "text/plain" });
      outgoing.end(`request counter: ${error.message}`);
    });
    // A client that goes away (an agent killed at its time cap) cancels the model's work too.
    outgoing.on("close", () => {
      if (!outgoing.writableFinished) forwarded.destroy();
    });
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    posts: () => posts,
    answered: () => answered,
    reset: () => {
      posts = 0;
      answered = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

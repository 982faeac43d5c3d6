/**
 * Live streaming on the guarded path (`npm run bench:proxy-stream`), loopback only, ADR 014.
 *
 * A scripted backend (its own process, node:http on 127.0.0.1) streams each answer over about
 * 2 s: prose as 20 content deltas 100 ms apart (the first at once), or a native `get_weather`
 * call whose arguments come in 20 deltas 100 ms apart. The same streamed requests go to it
 * directly and through `forge proxy` (`startProxy` + `createHttpBackend`, native tool mode, the
 * request with tools, so the guarded path), and the bench prints as Markdown:
 *
 * - prose: the time to the first text byte, direct and through the proxy;
 * - call: the time from the backend writing its last argument delta to the client receiving the
 *   call (direct: that delta; through the proxy: the validated call), on one clock
 *   (`performance.timeOrigin + performance.now()` in both processes).
 *
 * A request without `stream: true` (a proxy that buffers, as before ADR 014) gets the same answer
 * whole after the same 2 s. Options: --runs N (per case and path, default 4), --step-ms N (between
 * deltas, 100), --deltas N (20). Bounded: the whole run stops itself after 55 s.
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const SELF = fileURLToPath(import.meta.url);
const HARD_LIMIT_MS = 55_000;

const { values: args } = parseArgs({
  options: {
    role: { type: "string", default: "main" },
    runs: { type: "string", default: "4" },
    "step-ms": { type: "string", default: "100" },
    deltas: { type: "string", default: "20" },
  },
});

const now = () => performance.timeOrigin + performance.now();

// ── backend role ─────────────────────────────────────────────────────────────────────────────
async function runBackendRole(): Promise<void> {
  const stepMs = Number(args["step-ms"]);
  const deltas = Number(args.deltas);
  let lastDeltaAt = 0;
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${JSON.stringify({
      id: "chatcmpl-bench",
      object: "chat.completion.chunk",
      created: 0,
      model: "bench",
      choices: [{ index: 0, delta, finish_reason: finish }],
    })}\n\n`;
  const server = createServer(async (incoming, outgoing) => {
    const pieces: Buffer[] = [];
    for await (const piece of incoming) pieces.push(piece as Buffer);
    if (incoming.url === "/last") {
      outgoing.writeHead(200, { "content-type": "application/json" });
      outgoing.end(JSON.stringify({ lastDeltaAt }));
      return;
    }
    if (incoming.url !== "/v1/chat/completions") {
      outgoing.writeHead(404).end();
      return;
    }
    const body = JSON.parse(Buffer.concat(pieces).toString("utf8")) as {
      messages: { content: string }[];
      stream?: boolean;
    };
    const call = JSON.stringify(body.messages).includes("CALL");
    if (body.stream !== true) {
      // Asked for a whole answer (the proxy before live streaming): the same 2 s, then all of it.
      await new Promise((resolve) => setTimeout(resolve, stepMs * (deltas - 1)));
      lastDeltaAt = now();
      const message = call
        ? {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call_0",
                type: "function",
                function: { name: "get_weather", arguments: JSON.stringify({ city: "P".repeat(deltas) }) },
              },
            ],
          }
        : {
            role: "assistant",
            content: Array.from({ length: deltas }, (_, index) => `word${index} `).join(""),
          };
      outgoing.writeHead(200, { "content-type": "application/json" });
      outgoing.end(
        JSON.stringify({
          id: "chatcmpl-bench",
          object: "chat.completion",
          created: 0,
          model: "bench",
          choices: [{ index: 0, message, finish_reason: call ? "tool_calls" : "stop" }],
        }),
      );
      return;
    }
    outgoing.writeHead(200, { "content-type": "text/event-stream" });
    outgoing.write(chunk({ role: "assistant", content: "" }));
    if (call) {
      outgoing.write(
        chunk({
          tool_calls: [
            { index: 0, id: "call_0", type: "function", function: { name: "get_weather", arguments: "" } },
          ],
        }),
      );
    }
    const argument = JSON.stringify({ city: "P".repeat(deltas) });
    const cut = (index: number) => Math.round((argument.length * index) / deltas);
    for (let index = 0; index < deltas; index += 1) {
      if (index > 0) await new Promise((resolve) => setTimeout(resolve, stepMs));
      const delta = call
        ? { tool_calls: [{ index: 0, function: { arguments: argument.slice(cut(index), cut(index + 1)) } }] }
        : { content: `word${index} ` };
      outgoing.write(chunk(delta));
      lastDeltaAt = now();
    }
    outgoing.write(chunk({}, call ? "tool_calls" : "stop"));
    outgoing.end("data: [DONE]\n\n");
  });
  server.listen(0, "127.0.0.1", () => {
    process.send?.({ type: "ready", url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  });
}

// ── main ─────────────────────────────────────────────────────────────────────────────────────
interface Timing {
  /** When the first text byte came (ms since the request was sent), or undefined. */
  firstText?: number;
  /** When (absolute) the call, or its last argument delta, came. */
  callAt?: number;
}

/** Send one streamed request and time what comes back. */
function timeRequest(url: string, body: Record<string, unknown>): Promise<Timing> {
  return new Promise((resolve, reject) => {
    const started = now();
    const timing: Timing = {};
    const target = new URL(url);
    const outgoing = httpRequest(
      {
        hostname: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        headers: { "content-type": "application/json" },
      },
      (incoming) => {
        let buffer = "";
        incoming.setEncoding("utf8");
        incoming.on("data", (text: string) => {
          buffer += text;
          let end = buffer.indexOf("\n\n");
          while (end !== -1) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf("\n\n");
            const data = event.split("\n").find((line) => line.startsWith("data: "));
            if (!data || data === "data: [DONE]") continue;
            const delta = (JSON.parse(data.slice(6)) as { choices?: { delta?: Record<string, unknown> }[] })
              .choices?.[0]?.delta;
            if (typeof delta?.content === "string" && delta.content.length > 0) {
              timing.firstText ??= now() - started;
            }
            if (Array.isArray(delta?.tool_calls)) timing.callAt = now();
          }
        });
        incoming.on("end", () => resolve(timing));
        incoming.on("error", reject);
      },
    );
    outgoing.on("error", reject);
    outgoing.end(JSON.stringify(body));
  });
}

async function lastDeltaAt(backendUrl: string): Promise<number> {
  const answer = await fetch(`${backendUrl}/last`);
  return ((await answer.json()) as { lastDeltaAt: number }).lastDeltaAt;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
const format = (values: number[]) =>
  `${median(values).toFixed(1)} (${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)})`;

async function main(): Promise<void> {
  const limit = setTimeout(() => {
    console.error("proxy-stream bench: over its time limit, stopping");
    process.exit(1);
  }, HARD_LIMIT_MS);
  const runs = Number(args.runs);
  const backend: ChildProcess = fork(
    SELF,
    ["--role", "backend", "--step-ms", String(args["step-ms"]), "--deltas", String(args.deltas)],
    { stdio: "inherit" },
  );
  const [ready] = (await once(backend, "message")) as [{ url: string }];
  const { createHttpBackend } = await import("../src/proxy/backend/http-backend.ts");
  const { startProxy } = await import("../src/proxy/server.ts");
  const proxy = await startProxy({
    backend: createHttpBackend({ url: ready.url, toolMode: "native" }),
    host: "127.0.0.1",
    port: 0,
  });
  const tools = [
    {
      type: "function",
      function: {
        name: "get_weather",
        description: "Weather of a city",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
    },
  ];
  const ask = (content: string) => ({ model: "bench", stream: true, messages: [{ role: "user", content }] });
  const direct = `${ready.url}/v1/chat/completions`;
  const guarded = `${proxy.url}/v1/chat/completions`;
  const prose = { direct: [] as number[], proxy: [] as number[] };
  const call = { direct: [] as number[], proxy: [] as number[] };
  try {
    // One warm-up each way, not counted.
    await timeRequest(direct, ask("hi"));
    await timeRequest(guarded, { ...ask("hi"), tools });
    for (let run = 0; run < runs; run += 1) {
      prose.direct.push((await timeRequest(direct, ask("hi"))).firstText ?? Number.NaN);
      prose.proxy.push((await timeRequest(guarded, { ...ask("hi"), tools })).firstText ?? Number.NaN);
      const directCall = await timeRequest(direct, { ...ask("CALL"), tools });
      call.direct.push((directCall.callAt ?? Number.NaN) - (await lastDeltaAt(ready.url)));
      const proxyCall = await timeRequest(guarded, { ...ask("CALL"), tools });
      call.proxy.push((proxyCall.callAt ?? Number.NaN) - (await lastDeltaAt(ready.url)));
    }
  } finally {
    await proxy.close();
    backend.kill();
    clearTimeout(limit);
  }
  const answerMs = Number(args.deltas) * Number(args["step-ms"]);
  console.log(
    `## forge proxy: live streaming (${runs} runs per cell, a ${answerMs} ms streamed answer; median (min–max), ms)\n`,
  );
  console.log("| case | direct | through the guarded path | added |");
  console.log("|---|---|---|---|");
  console.log(
    `| prose: time to the first text byte | ${format(prose.direct)} | ${format(prose.proxy)} | ${(median(prose.proxy) - median(prose.direct)).toFixed(1)} |`,
  );
  console.log(
    `| tool call: last argument delta → call at the client | ${format(call.direct)} | ${format(call.proxy)} | ${(median(call.proxy) - median(call.direct)).toFixed(1)} |`,
  );
}

if (args.role === "backend") await runBackendRole();
else await main();

/**
 * forge proxy vs LiteLLM's proxy, side by side (`npm run bench:litellm`), loopback only: in one
 * run, the same requests go to a fast local OpenAI-compatible backend directly, through
 * `forge proxy` and through LiteLLM's proxy (`litellm --config …`, from PyPI), and the added
 * latency (p50, p95 over direct) and the CPU each proxy spends per request are printed as Markdown.
 *
 * Processes: the backend (a node:http server in a child of this one, answering every chat request
 * at once: a `get_weather` call when the request has tools, text otherwise), `forge proxy
 * --backend-url` (the CLI, as a user runs it), `litellm` with a one-model config, and this one,
 * sending the requests one at a time (so latency is the proxy's own, not queueing) in rounds that
 * alternate the three targets, so a burst of load on the machine falls on all of them alike.
 * Two request kinds: `tools` (forge's guarded path: validation and the `respond` tool; LiteLLM
 * forwards) and `plain` (no tools: both forward). CPU is each proxy's process tree's user + system
 * time from /proc over the measured requests, divided by their count.
 *
 * Bounded: `--requests N` per target and kind (default 300), every phase under `--max-seconds`
 * (default 600) in all, then everything it started is stopped. LiteLLM comes from
 * `.cache/litellm-venv` (or `--litellm PATH`); without it the bench says so in one line with the
 * install command and measures forge alone.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const SELF = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DEFAULT_LITELLM = join(ROOT, ".cache", "litellm-venv", "bin", "litellm");
const INSTALL = "python3 -m venv .cache/litellm-venv && .cache/litellm-venv/bin/pip install 'litellm[proxy]'";
const ROUND = 25;
const MODEL = "local";

const { values: args } = parseArgs({
  options: {
    role: { type: "string", default: "main" },
    requests: { type: "string", default: "300" },
    "max-seconds": { type: "string", default: "600" },
    litellm: { type: "string", default: DEFAULT_LITELLM },
  },
});

// ── backend role ────────────────────────────────────────────────────────────────────────────
function runBackend(): void {
  let count = 0;
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const path = (incoming.url ?? "/").split("?")[0];
      let body: unknown;
      if (incoming.method === "POST" && path === "/v1/chat/completions") {
        const request = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { tools?: unknown[] };
        body = completion(++count, request.tools !== undefined && request.tools.length > 0);
      } else if (path === "/v1/models") {
        body = { object: "list", data: [{ id: MODEL, object: "model", owned_by: "bench" }] };
      } else if (path === "/props") {
        body = { default_generation_settings: { n_ctx: 32768 } };
      } else if (path === "/health") {
        body = { status: "ok" };
      } else {
        outgoing.writeHead(404, { "content-type": "application/json" });
        outgoing.end(JSON.stringify({ error: { message: `no route ${path}` } }));
        return;
      }
      outgoing.writeHead(200, { "content-type": "application/json" });
      outgoing.end(JSON.stringify(body));
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => {
    process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  });
}

function completion(id: number, withTool: boolean) {
  const message = withTool
    ? {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: `call_${id}`,
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
          },
        ],
      }
    : { role: "assistant", content: "It is 4°C in Oslo." };
  return {
    id: `chatcmpl-${id}`,
    object: "chat.completion",
    created: 0,
    model: MODEL,
    choices: [{ index: 0, message, finish_reason: withTool ? "tool_calls" : "stop" }],
    usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 },
  };
}

// ── main role ───────────────────────────────────────────────────────────────────────────────
const WEATHER_TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};
const BODIES = {
  tools: JSON.stringify({
    model: MODEL,
    messages: [{ role: "user", content: "Weather in Oslo?" }],
    tools: [WEATHER_TOOL],
  }),
  plain: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Weather in Oslo?" }] }),
};
type Kind = keyof typeof BODIES;

interface Target {
  name: string;
  url: string;
  /** The process whose tree's CPU is counted; undefined for the backend itself. */
  pid: number | undefined;
  check(answer: Record<string, unknown>, kind: Kind): void;
}

const CLOCK_TICKS_PER_SECOND = 100;

/** User + system CPU seconds of a process and all its descendants, from /proc. */
function treeCpuSeconds(rootPid: number): number {
  const parents = new Map<number, number>();
  const ticks = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // Gone between the listing and the read.
    }
    // Fields after the command name (which may hold spaces), from field 3 on.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    parents.set(Number(entry), Number(fields[1]));
    ticks.set(Number(entry), Number(fields[11]) + Number(fields[12]));
  }
  let total = 0;
  for (const [pid, own] of ticks) {
    for (let ancestor: number | undefined = pid; ancestor !== undefined && ancestor > 1; ) {
      if (ancestor === rootPid) {
        total += own;
        break;
      }
      ancestor = parents.get(ancestor);
    }
  }
  return total / CLOCK_TICKS_PER_SECOND;
}

async function post(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

async function waitUntilServing(
  url: string,
  headers: Record<string, string>,
  child: ChildProcess,
  what: string,
) {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}) before serving`);
    try {
      await post(url, BODIES.plain, headers);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  throw new Error(`${what} did not serve ${url} within 120 s`);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function main(): Promise<void> {
  const requests = Number(args.requests);
  const deadline = Date.now() + Number(args["max-seconds"]) * 1000;
  const children: ChildProcess[] = [];
  const folder = mkdtempSync(join(tmpdir(), "forge-litellm-bench-"));
  const stopAll = () => {
    for (const child of children) {
      if (child.exitCode === null && child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          child.kill("SIGKILL");
        }
      }
    }
    rmSync(folder, { recursive: true, force: true });
  };
  process.on("exit", stopAll);
  try {
    const backend = fork(SELF, ["--role", "backend"], { stdio: "inherit", detached: true });
    children.push(backend);
    const [{ url: backendUrl }] = (await once(backend, "message")) as [{ url: string }];

    const forgePort = await freePort();
    const forge = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(ROOT, "scripts", "forge.ts"),
        "proxy",
        "--backend-url",
        backendUrl,
        "--host",
        "127.0.0.1",
        "--port",
        String(forgePort),
        "--api-key",
        "bench-key",
      ],
      // Its access log (a line per request, on stderr) is left out of the bench's output.
      { cwd: ROOT, stdio: ["ignore", "ignore", "ignore"], detached: true },
    );
    children.push(forge);
    const forgeUrl = `http://127.0.0.1:${forgePort}`;
    const auth = { authorization: "Bearer bench-key" };
    await waitUntilServing(forgeUrl, auth, forge, "forge proxy");

    const targets: (Target & { headers: Record<string, string> })[] = [
      { name: "direct", url: backendUrl, pid: undefined, headers: {}, check: checkAnswer },
      { name: "forge proxy", url: forgeUrl, pid: forge.pid, headers: auth, check: checkAnswer },
    ];
    let litellmVersion = "";
    if (existsSync(args.litellm)) {
      const config = join(folder, "litellm.yaml");
      writeFileSync(
        config,
        [
          "model_list:",
          `  - model_name: ${MODEL}`,
          "    litellm_params:",
          `      model: openai/${MODEL}`,
          `      api_base: ${backendUrl}/v1`,
          "      api_key: unused",
          "litellm_settings:",
          "  telemetry: false",
          "general_settings:",
          "  master_key: sk-bench-key",
          "",
        ].join("\n"),
      );
      const litellmPort = await freePort();
      const litellm = spawn(
        args.litellm,
        ["--config", config, "--host", "127.0.0.1", "--port", String(litellmPort), "--num_workers", "1"],
        {
          cwd: folder,
          stdio: ["ignore", "ignore", "ignore"],
          detached: true,
          env: { ...process.env, LITELLM_LOG: "ERROR", LITELLM_TELEMETRY: "False", NO_DOCS: "True" },
        },
      );
      children.push(litellm);
      const litellmUrl = `http://127.0.0.1:${litellmPort}`;
      const litellmAuth = { authorization: "Bearer sk-bench-key" };
      await waitUntilServing(litellmUrl, litellmAuth, litellm, "litellm");
      litellmVersion = pythonPackageVersion(args.litellm, "litellm");
      targets.push({
        name: "LiteLLM proxy",
        url: litellmUrl,
        pid: litellm.pid,
        headers: litellmAuth,
        check: checkAnswer,
      });
    } else {
      console.log(`LiteLLM is not installed (${args.litellm}): ${INSTALL}; measuring forge alone.`);
    }

    const lines: string[] = [];
    for (const kind of ["tools", "plain"] as const) {
      const latencies = new Map<string, number[]>(targets.map((target) => [target.name, []]));
      const cpu = new Map<string, number>(targets.map((target) => [target.name, 0]));
      // Warm-up: JIT, connection pools, LiteLLM's first-call imports.
      for (const target of targets) {
        for (let index = 0; index < 20; index++) await post(target.url, BODIES[kind], target.headers);
      }
      for (let done = 0; done < requests; done += ROUND) {
        if (Date.now() > deadline) throw new Error(`--max-seconds ${args["max-seconds"]} passed; stopping`);
        for (const target of targets) {
          const cpuBefore = target.pid === undefined ? 0 : treeCpuSeconds(target.pid);
          for (let index = 0; index < Math.min(ROUND, requests - done); index++) {
            const started = performance.now();
            const answer = await post(target.url, BODIES[kind], target.headers);
            latencies.get(target.name)?.push(performance.now() - started);
            target.check(answer, kind);
          }
          if (target.pid !== undefined) {
            cpu.set(target.name, (cpu.get(target.name) ?? 0) + treeCpuSeconds(target.pid) - cpuBefore);
          }
        }
      }
      const sortedDirect = [...(latencies.get("direct") ?? [])].sort((a, b) => a - b);
      const directP50 = percentile(sortedDirect, 0.5);
      const directP95 = percentile(sortedDirect, 0.95);
      lines.push(
        `\n**${kind === "tools" ? "With a tool (forge: guarded path)" : "No tools (forge: passthrough)"}**, ${requests} requests per target, one at a time\n`,
      );
      lines.push("| target | p50 ms | p95 ms | added p50 ms | added p95 ms | proxy CPU per request ms |");
      lines.push("| --- | --- | --- | --- | --- | --- |");
      for (const target of targets) {
        const sorted = [...(latencies.get(target.name) ?? [])].sort((a, b) => a - b);
        const p50 = percentile(sorted, 0.5);
        const p95 = percentile(sorted, 0.95);
        const added = target.pid === undefined ? "" : (p50 - directP50).toFixed(2);
        const added95 = target.pid === undefined ? "" : (p95 - directP95).toFixed(2);
        const cpuMs =
          target.pid === undefined ? "" : (((cpu.get(target.name) ?? 0) * 1000) / requests).toFixed(2);
        lines.push(
          `| ${target.name} | ${p50.toFixed(2)} | ${p95.toFixed(2)} | ${added} | ${added95} | ${cpuMs} |`,
        );
      }
    }
    const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
    console.log(
      `forge proxy vs LiteLLM${litellmVersion ? ` ${litellmVersion}` : ""} in front of the same backend, Node ${process.version}, load average at the end ${load}`,
    );
    console.log(lines.join("\n"));
  } finally {
    stopAll();
  }
}

/** Both proxies must give the backend's answer: the call with tools, the text without. */
function checkAnswer(answer: Record<string, unknown>, kind: Kind): void {
  const message = (
    answer.choices as { message?: { content?: unknown; tool_calls?: { function: { name: string } }[] } }[]
  )[0]?.message;
  const ok =
    kind === "tools"
      ? message?.tool_calls?.[0]?.function.name === "get_weather"
      : message?.content === "It is 4°C in Oslo.";
  if (!ok) throw new Error(`unexpected ${kind} answer: ${JSON.stringify(answer).slice(0, 300)}`);
}

/** The version pip installed next to a venv's console script. */
function pythonPackageVersion(script: string, name: string): string {
  const lib = join(script, "..", "..", "lib");
  for (const python of readdirSync(lib)) {
    const site = join(lib, python, "site-packages");
    const dist = readdirSync(site).find(
      (entry) => entry.startsWith(`${name}-`) && entry.endsWith(".dist-info"),
    );
    if (dist) return dist.slice(name.length + 1, -".dist-info".length);
  }
  return "";
}

if (args.role === "backend") runBackend();
else
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });

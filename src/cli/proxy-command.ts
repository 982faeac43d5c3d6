/**
 * `forge proxy`: the guardrail proxy in front of an external backend (`--backend-url`) or a
 * llama-server it manages (`--backend llamaserver --gguf`).
 */
import { existsSync } from "node:fs";
import { type Command, Option } from "commander";
import type { ProxyBackend } from "../proxy/backend/index.ts";
import type { RunningProxy } from "../proxy/server.ts";
import { PortInUseError, ServerStartError } from "../server/errors.ts";
import { callFormatFor, describeCallFormat } from "./chat-template-option.ts";
import { otelEndpointOption, startCliTelemetry } from "./otel-option.ts";
import { loadPermissions } from "./permissions-option.ts";
import { flagName, type ProxyCliOptions, proxyCliOptionsSchema } from "./proxy-options.ts";

/** Add the `proxy` subcommand to `program`. */
export function registerProxyCommand(program: Command): Command {
  const command = program
    .command("proxy")
    .description(
      "Serve OpenAI- and Anthropic-compatible endpoints that apply forge's guardrails (validation, rescue, retry nudges, the respond tool) in front of a model server",
    );
  addBackendOptions(command)
    .option("--host <host>", "interface to listen on", "127.0.0.1")
    .option("--port <port>", "port to listen on", "8081")
    .option(
      "--allow-host <host>",
      "Host name served besides localhost/127.0.0.1/[::1] (name or name:port; * any; repeatable)",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .addOption(
      new Option("--log-format <format>", "access log lines on stderr, one per request")
        .choices(["text", "json"])
        .default("text"),
    )
    .option("--quiet", "no access log", false);
  return addGuardOptions(command).action(async (raw: Record<string, unknown>, command: Command) => {
    const parsed = proxyCliOptionsSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      command.error(`error: ${flagName(issue?.path[0])}: ${issue?.message ?? "invalid options"}`);
      return;
    }
    const proxy = await runProxy(parsed.data);
    stopOnSignals(proxy, parsed.data.drainTimeout);
  });
}

/**
 * The options that choose and reach the backend (`--backend-url`, or `--backend llamaserver
 * --gguf` and its supervision), then `--api-key` and `--model`; shared by `forge proxy` and
 * `forge launch`.
 */
export function addBackendOptions(command: Command): Command {
  return command
    .option(
      "--backend-url <url>",
      "external backend, e.g. http://127.0.0.1:8080 (llama-server, vLLM, Ollama, …)",
    )
    .addOption(
      new Option("--backend <kind>", "start and manage the backend yourself").choices(["llamaserver"]),
    )
    .option("--gguf <path>", "model file for --backend llamaserver")
    .option("--backend-port <port>", "port of the managed llama-server (default: a free one)")
    .option("--ctx <tokens>", "context size of the managed llama-server (default: llama-server's choice)")
    .option("--slots <n>", "parallel slots of the managed llama-server")
    .option("--max-restarts <n>", "managed llama-server: restarts allowed within --restart-window", "5")
    .option("--restart-window <ms>", "managed llama-server: window of --max-restarts", "600000")
    .option("--restart-backoff <ms>", "managed llama-server: first restart delay, doubled each time", "500")
    .option("--probe-interval <ms>", "managed llama-server: /health liveness probe period (0: off)", "10000")
    .option("--probe-timeout <ms>", "managed llama-server: deadline of one liveness probe", "5000")
    .option("--probe-failures <n>", "managed llama-server: failed probes in a row before a restart", "3")
    .addOption(
      new Option("--backend-format <format>", "wire format of --backend-url")
        .choices(["openai", "ollama", "anthropic"])
        .default("openai"),
    )
    .addOption(
      new Option("--backend-api-key <key>", "credential sent to the backend (never the client's)").env(
        "FORGE_BACKEND_API_KEY",
      ),
    )
    .addOption(
      new Option("--api-key <key>", "key clients must send (Bearer or x-api-key)").env("FORGE_PROXY_API_KEY"),
    )
    .option("--model <name>", "model for requests that name none");
}

/** The guardrail, limit and timeout options; shared by `forge proxy` and `forge launch`. */
export function addGuardOptions(command: Command): Command {
  return command
    .option("--max-retries <n>", "nudged retries per request (at most n + 1 LLM calls)", "3")
    .option("--no-rescue", "do not rescue tool calls written as text")
    .option(
      "--prose-policy <policy>",
      "under tool_choice auto: answer (take a text answer with no sign of a call attempt at once) or nudge (nudge every text answer)",
      "answer",
    )
    .option(
      "--chat-template <source>",
      "how the model writes a tool call: auto (read the template from a llama-server backend's /props), off, or the path of a Jinja chat template",
      "auto",
    )
    .option(
      "--follow-up-max-calls <n>",
      "after an answer with calls, let the model continue its turn until it adds no new call, up to n calls (1: off; try 8 for small models asked for several calls at once)",
      "1",
    )
    .option(
      "--call-confidence <p>",
      "under tool_choice auto, take a call rescued from a first answer's text only when the model was at least p (0-1) likely to open with a call, by the backend's logprobs; otherwise answer in text (off unless given; try 0.5; llama-server or vLLM backends)",
    )
    .option(
      "--no-respond-upstream",
      "where the prose policy takes a text answer (tool_choice auto, --prose-policy answer), send the client's tools without the proxy's respond tool: a shorter prompt, the model answers in text natively",
    )
    .option(
      "--grounded-calls",
      "under tool_choice auto, decline the calls rescued from a first answer's text when a required argument's value, or every argument value, appears nowhere in the conversation, and answer in text (off by default; for question answering, not agents)",
    )
    .addOption(
      new Option(
        "--reasoning-replay <policy>",
        "which reasoning blocks clients send back go upstream: none, keep-last (the latest) or full",
      )
        .choices(["none", "keep-last", "full"])
        .default("none"),
    )
    .option("--serialize", "send one request at a time to the backend (single-slot servers)", false)
    .option("--max-body-bytes <n>", "largest request body accepted (413 above)", String(10 * 1024 * 1024))
    .option("--timeout <ms>", "how long the backend may take to start answering (504 after)", "600000")
    .option("--idle-timeout <ms>", "longest backend silence within an answer's body (504; 0: none)", "300000")
    .option("--deadline <ms>", "total time a request may take, retries included (504; 0: none)", "0")
    .option("--max-response-bytes <n>", "largest backend answer (502 above)", String(32 * 1024 * 1024))
    .option("--max-in-flight <n>", "requests served at once; more wait in line", "64")
    .option(
      "--max-body-memory <n>",
      "request body bytes served at once; more wait in line",
      String(16 * 1024 * 1024),
    )
    .option(
      "--reclaim-after <n>",
      "bytes of large (1 MiB+) request bodies served between two full garbage collections (0: leave it to V8)",
      String(16 * 1024 * 1024),
    )
    .option("--max-queue <n>", "requests that may wait (in-flight and --serialize lines; 503 above)", "256")
    .option("--max-json-depth <n>", "deepest nesting of arrays and objects in a body (400 deeper)", "64")
    .option("--drain-timeout <ms>", "on SIGTERM/SIGINT, how long requests in flight may finish", "30000")
    .option("--budget-tokens <n>", "context budget for compaction (default: the backend's context length)")
    .addOption(
      new Option("--tool-mode <mode>", "how tools reach an OpenAI-compatible backend")
        .choices(["native", "prompt", "auto"])
        .default("auto"),
    )
    .option("--watch <url>", "report each guarded request as a run to a watch server (forge watch)")
    .option("--no-loop-guard", "do not step in when the model repeats the same call with the same result")
    .option(
      "--loop-threshold <n>",
      "identical calls with identical results in a row before the loop guard's note",
      "3",
    )
    .option(
      "--loop-exempt <tool>",
      "a tool the loop guard never counts (polling; repeatable)",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option(
      "--permissions <policy>",
      "allow/deny rules on tool calls: a preset (coding-safe) or a JSON policy file; denied calls go back to the model",
    )
    .option("--no-retry-bounds", "do not cap retries' max_tokens nor cut off looping generations")
    .option(
      "--retry-factor <x>",
      "a retry's max_tokens: at most this many times the first answer's tokens",
      "4",
    )
    .option("--retry-floor <tokens>", "a retry's max_tokens is never capped below this", "256")
    .option(
      "--think-calls",
      "read a call written at the end of an unclosed <think> (nothing after it, the call complete)",
    )
    .option(
      "--narrow-tools <k>",
      "send at most k of a request's tools, the most relevant to its latest turn (calls to the others still pass)",
    )
    .option(
      "--always-offer <tools>",
      "tools --narrow-tools always sends (comma-separated; repeatable)",
      (value: string, previous: string[]) => [
        ...previous,
        ...value
          .split(",")
          .map((name) => name.trim())
          .filter(Boolean),
      ],
      [] as string[],
    )
    .addOption(otelEndpointOption())
    .option("--otel-record-content", "record messages, tool arguments and results on the spans", false);
}

/** Where `runProxy` writes: its one "listening" line, and the access log (unless `--quiet`). */
export interface ProxyOutput {
  info(line: string): void;
  accessLog(line: string): void;
}

const consoleOutput: ProxyOutput = {
  info: (line) => console.info(line),
  accessLog: (line) => process.stderr.write(`${line}\n`),
};

/** Start the proxy the options describe; logs where it listens and what it guards. */
export async function runProxy(
  options: ProxyCliOptions,
  output: ProxyOutput = consoleOutput,
): Promise<RunningProxy> {
  // Loaded on use, so `forge --help` and other subcommands do not pay for the proxy's imports.
  const { startProxy } = await import("../proxy/server.ts");
  const backend = await backendFor(options);
  const telemetry = await startCliTelemetry({
    endpoint: options.otelEndpoint,
    recordContent: options.otelRecordContent,
    command: "proxy",
  });
  try {
    const callFormat = await callFormatFor(options.chatTemplate, backend);
    const proxy = await startProxy({
      backend,
      host: options.host,
      port: options.port,
      apiKey: options.apiKey,
      allowedHosts: options.allowHost,
      accessLog: options.quiet
        ? undefined
        : { format: options.logFormat, write: (line: string) => output.accessLog(line) },
      maxRetries: options.maxRetries,
      rescueEnabled: options.rescue,
      prosePolicy: options.prosePolicy,
      followUpMaxCalls: options.followUpMaxCalls,
      callConfidence: options.callConfidence,
      groundedCalls: options.groundedCalls,
      respondUpstream: options.respondUpstream,
      callFormat,
      reasoningReplay: options.reasoningReplay,
      serialize: options.serialize,
      maxBodyBytes: options.maxBodyBytes,
      budgetTokens: options.budgetTokens,
      deadlineMs: options.deadline,
      maxJsonDepth: options.maxJsonDepth,
      maxInFlight: options.maxInFlight,
      maxQueue: options.maxQueue,
      maxBodyMemoryBytes: options.maxBodyMemory,
      reclaimAfterBytes: options.reclaimAfter,
      drainTimeoutMs: options.drainTimeout,
      loopGuard: options.loopGuard && { threshold: options.loopThreshold, exemptTools: options.loopExempt },
      retryBounds: options.retryBounds && {
        retryFactor: options.retryFactor,
        retryFloorTokens: options.retryFloor,
      },
      thinkCalls: options.thinkCalls,
      ...(options.narrowTools !== undefined && {
        toolNarrowing: { maxTools: options.narrowTools, alwaysOffer: options.alwaysOffer },
      }),
      ...(options.permissions !== undefined && { permissions: loadPermissions(options.permissions) }),
      ...(options.watch !== undefined && { watch: { url: options.watch } }),
      ...(telemetry && { observeRequest: telemetry.observer.observeRequest }),
    });
    output.info(
      `forge proxy listening on ${proxy.url} (OpenAI: ${proxy.url}/v1, Anthropic: ${proxy.url}) → ${backend.url} [${backend.format}]${callFormat ? `, calls read as ${describeCallFormat(callFormat)} (its chat template)` : ""}${options.watch ? `, runs reported to ${options.watch}` : ""}${telemetry ? `, traces sent to ${options.otelEndpoint}` : ""}`,
    );
    if (telemetry === undefined) return proxy;
    // What the batch still holds goes out before the proxy is gone.
    return {
      ...proxy,
      close: () => proxy.close().finally(() => telemetry.export.shutdown()),
    };
  } catch (error) {
    await telemetry?.export.shutdown();
    await backend.close?.();
    throw isAddressInUse(error) ? portTaken(options.host, options.port, error) : error;
  }
}

async function backendFor(options: ProxyCliOptions): Promise<ProxyBackend> {
  const common = {
    format: options.backendFormat,
    ...(options.backendApiKey && { apiKey: options.backendApiKey }),
    ...(options.model && { defaultModel: options.model }),
    timeoutMs: options.timeout,
    idleTimeoutMs: options.idleTimeout,
    maxResponseBytes: options.maxResponseBytes,
    toolMode: options.toolMode,
  };
  if (options.backendUrl !== undefined) {
    const { createHttpBackend } = await import("../proxy/backend/http-backend.ts");
    return createHttpBackend({ url: options.backendUrl, ...common });
  }
  const ggufPath = options.gguf as string;
  if (!existsSync(ggufPath)) {
    throw new ServerStartError({
      kind: "spawn_failed",
      message: `--gguf ${ggufPath}: no such file; pass the path of a GGUF model file.`,
    });
  }
  const { startManagedBackend } = await import("../proxy/backend/managed-backend.ts");
  return startManagedBackend({
    launch: {
      ggufPath,
      ...(options.ctx !== undefined && { ctx: options.ctx }),
      ...(options.slots !== undefined && { slots: options.slots }),
    },
    ...(options.backendPort !== undefined && { port: options.backendPort }),
    supervision: {
      maxRestarts: options.maxRestarts,
      windowMs: options.restartWindow,
      backoffMs: options.restartBackoff,
      probeIntervalMs: options.probeInterval,
      probeTimeoutMs: options.probeTimeout,
      probeFailures: options.probeFailures,
    },
    timeoutMs: options.timeout,
    idleTimeoutMs: options.idleTimeout,
    maxResponseBytes: options.maxResponseBytes,
    toolMode: options.toolMode,
    ...(options.model && { defaultModel: options.model }),
  });
}

function stopOnSignals(proxy: RunningProxy, drainTimeoutMs: number): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    console.info(
      `forge proxy: ${signal}, not accepting new connections; waiting requests get 503; draining requests in flight (up to ${drainTimeoutMs} ms)`,
    );
    proxy.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

function isAddressInUse(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "EADDRINUSE";
}

function portTaken(host: string, port: number, cause: unknown): PortInUseError {
  const error = new PortInUseError({
    kind: "port_in_use",
    port,
    message:
      `port ${port} on ${host} is already in use: stop what holds it (e.g. \`lsof -i :${port}\`), ` +
      "or pass --port <another> (--port 0 picks a free one).",
  });
  error.cause = cause;
  return error;
}

/**
 * Watching a workflow run: offline in `forge watch`, or in the hosted Stately inspector.
 * `WorkflowRunner` takes an `inspect` observer and hands it to every workflow actor it creates, so
 * each transition of the statechart (compact → infer → validate → enforce → execute → … → done) is
 * reported.
 *
 * `npx tsx examples/inspect.ts` prints the transitions to the console, offline. Other modes:
 *
 *   FORGE_INSPECT=watch npx tsx examples/inspect.ts
 *     offline: starts the local run viewer (`startWatchServer`, what `forge watch` runs) on
 *     http://127.0.0.1:4141 (FORGE_WATCH_PORT) and reports the run to it with `createWatchReporter`;
 *     open the URL in a browser (no internet needed); Ctrl-C to exit. With FORGE_WATCH_URL set,
 *     reports to a `forge watch` already running instead.
 *   FORGE_INSPECT=server npx tsx examples/inspect.ts
 *     needs the internet: starts the bridge from `@statelyai/inspect/server` on
 *     127.0.0.1:FORGE_INSPECT_PORT (default 4242, away from llama-server's 8080), opens it in a
 *     browser, which loads the hosted inspector from https://stately.ai/inspect, and streams there
 *     with `createWebSocketInspector`. Ctrl-C to exit.
 *   FORGE_INSPECT_URL=ws://localhost:4242 npx tsx examples/inspect.ts
 *     streams to a Stately bridge that is already running.
 *
 * In a browser app, the Stately inspector opens in a new tab:
 *
 *   import { createBrowserInspector } from "@statelyai/inspect";
 *   const inspector = createBrowserInspector(); // opens https://stately.ai/inspect
 *   const runner = new WorkflowRunner({ client, contextManager, inspect: inspector.inspect });
 */
import { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { createWebSocketInspector } from "@statelyai/inspect";
import { createInspectorServer } from "@statelyai/inspect/server";
import { defineTool, defineWorkflow, type Message, WorkflowRunner } from "forge-guardrails";
import { ScriptedClient, text, toolCall } from "forge-guardrails/testing";
import { createWatchReporter, startWatchServer, type WatchReporter } from "forge-guardrails/watch";
import type { InspectionEvent, Observer } from "xstate";
import { z } from "zod";

/** One state a machine actor entered. */
export interface Transition {
  /** The machine's id (`workflow` for forge's loop). */
  machine: string;
  /** The event that caused it. */
  event: string;
  /** The state value entered. */
  state: string;
  /** True for an `@xstate.snapshot` (the state the actor rests in), false for an intermediate microstep. */
  settled: boolean;
}

/** What `main` reports. */
export interface InspectOutcome {
  result: unknown;
  transitions: Transition[];
}

/** Options of `main`. */
export interface InspectOptions {
  log?: (line: string) => void;
  /** A Stately inspector (`createWebSocketInspector()`, `createBrowserInspector()`, …) to stream to as well. */
  inspector?: { inspect: Observer<InspectionEvent> };
  /** A watch reporter (`createWatchReporter`) to send the run to a `forge watch` server as well. */
  watch?: WatchReporter;
}

/**
 * An `inspect` observer that records the states machine actors enter: every microstep (so the
 * eventless compact / validate / enforce states show up) and every settled snapshot.
 */
export function createTransitionRecorder(onTransition: (transition: Transition) => void) {
  return (event: InspectionEvent): void => {
    if (event.type !== "@xstate.microstep" && event.type !== "@xstate.snapshot") return;
    const snapshot = event.snapshot as { machine?: { id: string }; value?: unknown };
    if (!snapshot.machine) return; // promise actors (inference, tools) have no states
    onTransition({
      machine: snapshot.machine.id,
      event: event.event.type,
      state: typeof snapshot.value === "string" ? snapshot.value : JSON.stringify(snapshot.value),
      settled: event.type === "@xstate.snapshot",
    });
  };
}

/** Run one weather workflow with inspection on; the model rambles once before calling tools. */
export async function main(options: InspectOptions = {}): Promise<InspectOutcome> {
  const log = options.log ?? console.log;
  const transitions: Transition[] = [];
  const record = createTransitionRecorder((transition) => {
    transitions.push(transition);
    if (!transition.settled) log(`  ${transition.machine}: ${transition.event} → ${transition.state}`);
  });
  const inspect = (event: InspectionEvent) => {
    record(event);
    options.inspector?.inspect.next?.(event);
  };

  const getWeather = defineTool({
    name: "get_weather",
    description: "Current weather for a city",
    parameters: z.object({ city: z.string() }),
    execute: ({ city }) => `18°C and cloudy in ${city}`,
  });
  const reportWeather = defineTool({
    name: "report_weather",
    description: "Tell the user the weather",
    parameters: z.object({ city: z.string(), weather: z.string() }),
    execute: ({ city, weather }) => `${city}: ${weather}`,
  });
  const workflow = defineWorkflow({
    name: "weather",
    description: "Look the weather up and report it",
    tools: [getWeather, reportWeather],
    requiredSteps: ["get_weather"],
    terminalTool: "report_weather",
    systemPrompt: "You are a weather assistant.",
  });
  const client = new ScriptedClient([
    text("Let me check the weather for you."),
    toolCall("get_weather", { city: "Oslo" }),
    toolCall("report_weather", { city: "Oslo", weather: "18°C and cloudy" }),
  ]);
  const runnerOptions = {
    client,
    contextManager: { maybeCompact: (messages: Message[]) => messages },
    inspect,
  };
  const runner = new WorkflowRunner(options.watch ? options.watch.instrument(runnerOptions) : runnerOptions);

  log("Workflow transitions:");
  const result = await runner.run(workflow, "What's the weather in Oslo?");
  log(`Result: ${JSON.stringify(result)}`);
  return { result, transitions };
}

/**
 * The Stately bridge (`createInspectorServer`) on 127.0.0.1 only. The library listens on every
 * interface and takes no host, so its one `listen` call is given the loopback address while it
 * starts (it calls `listen` synchronously); nothing else is changed.
 */
export function startLoopbackInspectorBridge(options: { port: number; autoOpen?: boolean }): {
  stop(): void;
  address(): AddressInfo | null;
} {
  const listen = Server.prototype.listen;
  let started: Server | undefined;
  Server.prototype.listen = function (this: Server, port: number, ...rest: unknown[]) {
    started = this;
    const callback = rest.find((argument) => typeof argument === "function") as (() => void) | undefined;
    return (listen as (...args: unknown[]) => Server).call(this, port, "127.0.0.1", callback);
  } as typeof Server.prototype.listen;
  try {
    const bridge = createInspectorServer({ port: options.port, autoOpen: options.autoOpen ?? true });
    return { stop: () => bridge.stop(), address: () => (started?.address() as AddressInfo | null) ?? null };
  } finally {
    Server.prototype.listen = listen;
  }
}

async function watchReporter(): Promise<WatchReporter> {
  const url = process.env.FORGE_WATCH_URL;
  if (url) return createWatchReporter({ url, name: "inspect-example" });
  const watch = await startWatchServer({ port: Number(process.env.FORGE_WATCH_PORT ?? 4141) });
  console.log(`forge watch on ${watch.tokenUrl}: open it in a browser; press Ctrl-C to exit.`);
  return createWatchReporter({ url: watch.tokenUrl, name: "inspect-example" });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const mode = process.env.FORGE_INSPECT;
  const port = Number(process.env.FORGE_INSPECT_PORT ?? 4242);
  const server = mode === "server" ? startLoopbackInspectorBridge({ port }) : null;
  const url = server ? `ws://localhost:${port}` : process.env.FORGE_INSPECT_URL;
  const inspector = url ? createWebSocketInspector({ url }) : undefined;
  const watch = mode === "watch" ? await watchReporter() : undefined;
  main({ ...(inspector && { inspector }), ...(watch && { watch }) }).then(
    async () => {
      if (url) console.log(`Streaming to the inspector via ${url}; press Ctrl-C to exit.`);
      if (watch) {
        await watch.flush();
        console.log(`Run ${watch.runId} recorded.`);
        if (process.env.FORGE_WATCH_URL) process.exit(0);
      }
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
      inspector?.stop();
      server?.stop();
    },
  );
}

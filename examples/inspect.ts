/**
 * Watching a workflow run in the Stately inspector. `WorkflowRunner` takes an `inspect` observer
 * and hands it to every workflow actor it creates, so each transition of the statechart
 * (compact → infer → validate → enforce → execute → … → done) is reported.
 *
 * In a browser app, the inspector opens in a new tab:
 *
 *   import { createBrowserInspector } from "@statelyai/inspect";
 *   const inspector = createBrowserInspector(); // opens https://stately.ai/inspect
 *   const runner = new WorkflowRunner({ client, contextManager, inspect: inspector.inspect });
 *
 * Node has no window, so this script (`npx tsx examples/inspect.ts`) defaults to printing the
 * transitions to the console, offline. To see them in the Stately inspector instead:
 *
 *   FORGE_INSPECT=server npx tsx examples/inspect.ts
 *     starts the bridge from `@statelyai/inspect/server` on FORGE_INSPECT_PORT (default 8080),
 *     opens it in a browser and streams there with `createWebSocketInspector`; Ctrl-C to exit.
 *   FORGE_INSPECT_URL=ws://localhost:8080 npx tsx examples/inspect.ts
 *     streams to a bridge that is already running.
 */
import { pathToFileURL } from "node:url";
import { createWebSocketInspector } from "@statelyai/inspect";
import { createInspectorServer } from "@statelyai/inspect/server";
import type { InspectionEvent, Observer } from "xstate";
import { z } from "zod";
import { defineTool, defineWorkflow, WorkflowRunner } from "../src/index.ts";
import { ScriptedClient, text, toolCall } from "../src/testing/index.ts";

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
  const runner = new WorkflowRunner({
    client,
    contextManager: { maybeCompact: (messages) => messages },
    inspect,
  });

  log("Workflow transitions:");
  const result = await runner.run(workflow, "What's the weather in Oslo?");
  log(`Result: ${JSON.stringify(result)}`);
  return { result, transitions };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const port = Number(process.env.FORGE_INSPECT_PORT ?? 8080);
  const server = process.env.FORGE_INSPECT === "server" ? createInspectorServer({ port }) : null;
  const url = server ? `ws://localhost:${port}` : process.env.FORGE_INSPECT_URL;
  const inspector = url ? createWebSocketInspector({ url }) : undefined;
  main({ ...(inspector && { inspector }) }).then(
    () => {
      if (url) console.log(`Streaming to the inspector via ${url}; press Ctrl-C to exit.`);
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
      inspector?.stop();
      server?.stop();
    },
  );
}

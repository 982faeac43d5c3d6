/**
 * The source side of `forge watch`: a reporter that sends a `WorkflowRunner`'s runs to a watch
 * server as they happen — states entered (from XState's inspection events), messages, LLM calls
 * with their timings, compactions, and the outcome or typed error — by HTTP POST, in order.
 */
import type { AnyStateMachine, InspectionEvent } from "xstate";
import { type CompactEvent, ContextManager } from "../context/context-manager.ts";
import type { Message } from "../core/messages.ts";
import type { ToolSpec } from "../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SendOptions,
  type StreamChunk,
} from "../core/types.ts";
import { errorFromOutput } from "../loop/failure.ts";
import type { WorkflowRunnerOptions } from "../loop/runner.ts";
import type { WorkflowOutput } from "../machines/workflow.machine.ts";
import { type WatchEvent, WatchOutcome, type WatchSource } from "./events.ts";
import { statechartOf } from "./statechart.ts";
import {
  createRunId,
  createWatchTransport,
  describeThrown,
  type WatchTransportOptions,
} from "./transport.ts";

/** Options of `createWatchReporter`. */
export interface WatchReporterOptions extends WatchTransportOptions {
  /** The name runs are listed under (default `run`); a run's number is appended. */
  name?: string;
  source?: WatchSource;
  /**
   * The watch run id to report under (default a fresh one per run, from the name). With it, the
   * reporter is for one run (a queued run's), listed under `name` without a number.
   */
  runId?: string;
  /** Mark the run as resumed from a checkpoint. */
  resumed?: boolean;
}

/**
 * Reports runs to a watch server. Wire it in with `instrument(runnerOptions)` (and, for a
 * compactor other than `ContextManager`, its `onCompact`); a reporter follows one run at a time (a run opens at its first event and
 * closes when its root actor stops), so give concurrent runs a reporter (and runner) each. With
 * `machineFor` spawned from your own machine, the root actor is yours: its statechart is drawn.
 */
export interface WatchReporter {
  /**
   * The runner's options with the reporter wired in: the client wrapped (LLM timings and tokens),
   * `onMessage` and `inspect` chained after yours, and a `ContextManager`'s runs reporting their
   * compactions.
   */
  instrument(options: WorkflowRunnerOptions): WorkflowRunnerOptions;
  /**
   * Compactions to report: `instrument` wires it into a `ContextManager`; pass it to another
   * compactor yourself. An event heard twice is reported once.
   */
  onCompact(event: CompactEvent): void;
  onMessage(message: Message): void;
  inspect(event: InspectionEvent): void;
  /** A client that reports each call's timing, tokens and answer or error. */
  wrapClient(client: LLMClient): LLMClient;
  /** The id of the run being reported, or of the last one. */
  readonly runId: string | null;
  /** Resolves when every event so far reached the server; rejects with the first failed send. */
  flush(): Promise<void>;
}

/** Rough tokens of a JSON value: its length over 4 (what the page labels "estimated"). */
function estimateTokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value ?? "").length / 4);
}

function isRoot(actorRef: { sessionId: string }, rootId: string | undefined): boolean {
  return actorRef.sessionId === rootId;
}

/**
 * A reporter sending runs to the watch server at `url`.
 * @example
 * const watch = createWatchReporter({ url: "http://127.0.0.1:4141", name: "weather" });
 * const contextManager = new ContextManager({ strategy: new TieredCompact(), budgetTokens: 8192 });
 * const runner = new WorkflowRunner(watch.instrument({ client, contextManager }));
 * await runner.run(workflow, "What's the weather in Paris?");
 * await watch.flush();
 */
export function createWatchReporter(options: WatchReporterOptions): WatchReporter {
  const transport = createWatchTransport(options);
  let runNumber = 0;

  interface OpenRun {
    runId: string;
    startedAt: number;
    started: boolean;
    buffered: WatchEvent[];
    lastState: string | null;
    rootId: string | null;
  }
  let run: OpenRun | null = null;
  let lastRunId: string | null = null;

  const runName = () =>
    options.runId !== undefined ? (options.name ?? options.runId) : `${options.name ?? "run"} #${runNumber}`;
  const post = (runId: string, events: WatchEvent[]) => transport.post(runId, events);

  const open = (): OpenRun => {
    if (run === null) {
      runNumber += 1;
      run = {
        runId: options.runId ?? createRunId(options.name ?? "run"),
        startedAt: performance.now(),
        started: false,
        buffered: [],
        lastState: null,
        rootId: null,
      };
      lastRunId = run.runId;
    }
    return run;
  };
  const since = (current: OpenRun) => Math.round(performance.now() - current.startedAt);
  const emit = (current: OpenRun, event: WatchEvent) => {
    if (current.started) post(current.runId, [event]);
    else current.buffered.push(event);
  };
  // The run is announced when its root actor appears (with its statechart); earlier events wait.
  const start = (current: OpenRun, announcement: WatchEvent & { type: "run.started" }) => {
    current.started = true;
    post(current.runId, [announcement, ...current.buffered.splice(0)]);
  };
  const finish = (current: OpenRun, event: WatchEvent & { type: "run.finished" }) => {
    if (!current.started) {
      start(current, {
        type: "run.started",
        at: 0,
        name: runName(),
        source: options.source ?? "runner",
        ...(options.resumed && { resumed: true }),
        startedAt: Date.now() - since(current),
        statechart: null,
      });
    }
    emit(current, event);
    run = null;
  };

  const onMessage = (message: Message) => {
    const current = open();
    emit(current, { type: "message.appended", at: since(current), message });
  };

  // A compaction reaches the reporter twice when its onCompact is also the manager's own.
  const compactions = new WeakSet<CompactEvent>();
  const onCompact = (event: CompactEvent) => {
    if (compactions.has(event)) return;
    compactions.add(event);
    const current = open();
    emit(current, { type: "context.compacted", at: since(current), ...event });
  };

  const inspect = (event: InspectionEvent) => {
    if (event.type === "@xstate.actor" && event.actorRef.sessionId === event.rootId) {
      const current = open();
      if (current.rootId !== null) return;
      current.rootId = event.rootId;
      // An actor created from a machine carries it as its logic: its statechart is drawn from it.
      const logic = (event.actorRef as { logic?: unknown }).logic as AnyStateMachine | undefined;
      start(current, {
        type: "run.started",
        at: since(current),
        name: runName(),
        source: options.source ?? "runner",
        ...(options.resumed && { resumed: true }),
        startedAt: Date.now() - since(current),
        statechart: logic !== undefined && "root" in logic ? statechartOf(logic) : null,
      });
      return;
    }
    // Microsteps show the transient states too (compact, validate, enforce, review), which a
    // macrostep's snapshot passes through without stopping.
    if (
      (event.type !== "@xstate.snapshot" && event.type !== "@xstate.microstep") ||
      run === null ||
      !isRoot(event.actorRef, run.rootId ?? undefined)
    ) {
      return;
    }
    const current = run;
    const snapshot = event.snapshot as {
      status: string;
      value?: unknown;
      context?: { iteration?: number; runId?: string };
      output?: unknown;
      error?: unknown;
    };
    const state = typeof snapshot.value === "string" ? snapshot.value : JSON.stringify(snapshot.value);
    if (state !== current.lastState) {
      const first = current.lastState === null;
      current.lastState = state;
      const workflowRunId = snapshot.context?.runId;
      emit(current, {
        type: "state.entered",
        at: since(current),
        state,
        iteration: snapshot.context?.iteration ?? 0,
        ...(first && typeof workflowRunId === "string" && { workflowRunId }),
      });
    }
    if (snapshot.status === "done") {
      const output = snapshot.output as WorkflowOutput;
      if (output.status === "done") {
        finish(current, {
          type: "run.finished",
          at: since(current),
          outcome: WatchOutcome.DONE,
          result: output.result,
          error: null,
        });
      } else {
        finish(current, {
          type: "run.finished",
          at: since(current),
          outcome: output.status === "cancelled" ? WatchOutcome.CANCELLED : WatchOutcome.FAILED,
          error: describeThrown(errorFromOutput(output)),
        });
      }
    } else if (snapshot.status === "error") {
      finish(current, {
        type: "run.finished",
        at: since(current),
        outcome: WatchOutcome.FAILED,
        error: describeThrown(snapshot.error),
      });
    } else if (snapshot.status === "stopped") {
      finish(current, {
        type: "run.finished",
        at: since(current),
        outcome: WatchOutcome.CANCELLED,
        error: null,
      });
    }
  };

  const record = (started: number, messages: unknown, response: LLMResponse | null, error: unknown) => {
    const current = open();
    const at = Math.round(started - current.startedAt);
    emit(current, {
      type: "llm.called",
      at: Math.max(0, at),
      durationMs: Math.round((performance.now() - started) * 10) / 10,
      promptTokens: estimateTokens(messages),
      completionTokens: response ? estimateTokens(response) : 0,
      response,
      error: error === null ? null : describeThrown(error),
    });
  };

  const wrapClient = (inner: LLMClient): LLMClient => ({
    get apiFormat() {
      return inner.apiFormat;
    },
    async send(messages: Record<string, unknown>[], tools?: ToolSpec[], sendOptions?: SendOptions) {
      const started = performance.now();
      try {
        const response = await inner.send(messages, tools, sendOptions);
        record(started, messages, response, null);
        return response;
      } catch (error) {
        record(started, messages, null, error);
        throw error;
      }
    },
    async *sendStream(messages: Record<string, unknown>[], tools?: ToolSpec[], sendOptions?: SendOptions) {
      const started = performance.now();
      let final: LLMResponse | null = null;
      try {
        for await (const chunk of inner.sendStream(
          messages,
          tools,
          sendOptions,
        ) as AsyncIterable<StreamChunk>) {
          if (chunk.type === ChunkType.FINAL && chunk.response) final = chunk.response;
          yield chunk;
        }
        record(started, messages, final, null);
      } catch (error) {
        record(started, messages, null, error);
        throw error;
      }
    },
    getContextLength: () => inner.getContextLength(),
  });

  return {
    instrument(runnerOptions) {
      const { onMessage: theirs, inspect: theirInspect } = runnerOptions;
      return {
        ...runnerOptions,
        client: wrapClient(runnerOptions.client),
        contextManager: reportingCompactions(runnerOptions.contextManager, onCompact),
        onMessage: (message) => {
          theirs?.(message);
          onMessage(message);
        },
        inspect: (event) => {
          theirInspect?.(event);
          inspect(event);
        },
      };
    },
    onCompact,
    onMessage,
    inspect,
    wrapClient,
    get runId() {
      return run?.runId ?? lastRunId;
    },
    flush: () => transport.flush(),
  };
}

/**
 * A `ContextManager` whose runs (`forRun`) also report their compactions to `onCompact`; another
 * compactor as it is (pass the reporter's `onCompact` to it yourself).
 */
function reportingCompactions(
  manager: WorkflowRunnerOptions["contextManager"],
  onCompact: (event: CompactEvent) => void,
): WorkflowRunnerOptions["contextManager"] {
  if (!(manager instanceof ContextManager)) return manager;
  return {
    maybeCompact: (messages, stepIndex, stepHint) => manager.maybeCompact(messages, stepIndex, stepHint),
    takeWarnings: () => manager.takeWarnings(),
    observeUsage: (sent, promptTokens) => manager.observeUsage(sent, promptTokens),
    setTools: (tools) => manager.setTools(tools),
    resetWarnings: () => manager.resetWarnings(),
    forRun: () => manager.forRun({ onCompact }),
  };
}

/**
 * The source side of `forge watch`: a reporter that sends a `WorkflowRunner`'s runs to a watch
 * server as they happen — its start with the statechart, states entered, messages, LLM calls with
 * their timings, compactions, and the outcome or typed error — by HTTP POST, in order. It is a
 * `RunObserver` (docs/decisions/015): nothing wraps the client.
 */
import type { AnyStateMachine, InspectionEvent } from "xstate";
import type { CompactEvent } from "../../context/context-manager.ts";
import type { Message } from "../../core/messages.ts";
import type { RunEndEvent, RunObserver } from "../../core/run-observer.ts";
import type { WorkflowRunnerOptions } from "../../loop/runner.ts";
import { type WatchEvent, WatchOutcome, type WatchSource } from "./events.ts";
import { statechartOf } from "./statechart-graph.ts";
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
 * Reports runs to a watch server. Wire it in with `instrument(runnerOptions)` (or give `observer`
 * to a run's `observers`); a reporter follows one run at a time (a run opens at its first event
 * and closes when it ends), so give runs under way at once a reporter each. A compactor other than
 * `ContextManager` reports its compactions through `onCompact`. With `machineFor` spawned from
 * your own machine, pass `observer` in its hooks and `inspect` to your actor: your root machine's
 * statechart is drawn.
 */
export interface WatchReporter {
  /** The reporter as a run's observer: start, states, messages, LLM calls, compactions, end. */
  readonly observer: RunObserver;
  /** The runner's options with `observer` added after the runner's own observers. */
  instrument(options: WorkflowRunnerOptions): WorkflowRunnerOptions;
  /**
   * Compactions to report from a compactor of your own (a `ContextManager`'s reach the reporter
   * through `observer`). An event heard twice is reported once.
   */
  onCompact(event: CompactEvent): void;
  onMessage(message: Message): void;
  /** XState inspection: a root actor's appearance announces the run with its statechart. */
  inspect(event: InspectionEvent): void;
  /** The id of the run being reported, or of the last one. */
  readonly runId: string | null;
  /** Resolves when every event so far reached the server; rejects with the first failed send. */
  flush(): Promise<void>;
}

/** Rough tokens of a JSON value: its length over 4 (what the page labels "estimated"). */
function estimateTokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value ?? "").length / 4);
}

const outcomeOf: Record<Exclude<RunEndEvent["status"], "awaiting_approval">, WatchOutcome> = {
  done: WatchOutcome.DONE,
  responded: WatchOutcome.FAILED,
  failed: WatchOutcome.FAILED,
  cancelled: WatchOutcome.CANCELLED,
};

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
  // The run is announced when it starts (with its statechart); earlier events wait.
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

  const announce = (current: OpenRun, machine: AnyStateMachine | undefined, resumed: boolean) => {
    start(current, {
      type: "run.started",
      at: since(current),
      name: runName(),
      source: options.source ?? "runner",
      ...((options.resumed || resumed) && { resumed: true }),
      startedAt: Date.now() - since(current),
      statechart: machine !== undefined && "root" in machine ? statechartOf(machine) : null,
    });
  };

  const inspect = (event: InspectionEvent) => {
    if (event.type !== "@xstate.actor" || event.actorRef.sessionId !== event.rootId) return;
    const current = open();
    if (current.started) return;
    // An actor created from a machine carries it as its logic: its statechart is drawn from it.
    announce(current, (event.actorRef as { logic?: AnyStateMachine }).logic, false);
  };

  const observer: RunObserver = {
    onRunStart({ machine, resumed }) {
      const current = open();
      if (!current.started) announce(current, machine, resumed);
    },
    onState({ state, iteration, runId }) {
      const current = open();
      const first = current.lastState === null;
      current.lastState = state;
      emit(current, {
        type: "state.entered",
        at: since(current),
        state,
        iteration,
        ...(first && { workflowRunId: runId }),
      });
    },
    onMessage,
    onLLMCallEnd({ startedAt, durationMs, messages, response, error }) {
      const current = open();
      emit(current, {
        type: "llm.called",
        at: Math.max(0, Math.round(startedAt - current.startedAt)),
        durationMs: Math.round(durationMs * 10) / 10,
        promptTokens: estimateTokens(messages),
        completionTokens: response ? estimateTokens(response) : 0,
        response,
        error: error === null ? null : describeThrown(error),
      });
    },
    onCompaction({ measure }) {
      if (measure !== undefined) onCompact(measure);
    },
    onRunEnd({ status, result, error }) {
      // A parked run is not over: the viewer shows it waiting (its last state) until it resumes.
      if (status === "awaiting_approval") return;
      const current = open();
      finish(current, {
        type: "run.finished",
        at: since(current),
        outcome: outcomeOf[status],
        ...(status === "done" && { result }),
        error: error === null ? null : describeThrown(error),
      });
    },
  };

  return {
    observer,
    instrument: (runnerOptions) => ({
      ...runnerOptions,
      observers: [...(runnerOptions.observers ?? []), observer],
    }),
    onCompact,
    onMessage,
    inspect,
    get runId() {
      return run?.runId ?? lastRunId;
    },
    flush: () => transport.flush(),
  };
}

/**
 * WorkflowRunner: a thin facade that builds the workflow machine, runs one actor per `run()`,
 * and turns its output into the terminal tool's result or a typed error.
 */
import type { InspectionEvent, Snapshot } from "xstate";
import { assertInteger } from "../context/validate-option.ts";
import { type ApprovalDecision, undecidedCalls } from "../core/approval.ts";
import { AwaitingApprovalError, WorkflowCancelledError } from "../core/errors.ts";
import { assertMessages } from "../core/message-schema.ts";
import { createMessage, type Message, MessageRole, MessageType } from "../core/messages.ts";
import { resolveRank } from "../core/rank.ts";
import { assertReasoningReplay, type ReasoningReplay } from "../core/reasoning-replay.ts";
import {
  createObserverSet,
  type ObserverLogger,
  type ObserverSet,
  type RunEndEvent,
  type RunObserver,
} from "../core/run-observer.ts";
import type { ToolSpec } from "../core/tools.ts";
import type { LLMClient, StreamChunk } from "../core/types.ts";
import { renderSystemPrompt, type Workflow, workflowToolSpecs } from "../core/workflow.ts";
import type { EscalationOption } from "../guardrails/escalation.ts";
import { resolveLimits } from "../guardrails/limits.ts";
import type { RepairToolCall } from "../guardrails/repair.ts";
import type { RetryNudge } from "../guardrails/response-validator.ts";
import type { ActiveTools, ToolSubsets } from "../guardrails/tool-subset.ts";
import {
  createWorkflowMachine,
  type HistoryCompactor,
  type WorkflowMachine,
  type WorkflowMachineDeps,
  type WorkflowOutput,
} from "../machines/workflow.machine.ts";
import {
  createWorkflowConfig,
  type WorkflowConfig,
  type WorkflowInput,
} from "../machines/workflow-context.ts";
import type { TemplateCallFormat } from "../prompts/chat-template.ts";
import { assertDecisionsFit, settleOrPark } from "./approval-park.ts";
import { type ActorStart, BoundMachine } from "./bound-machine.ts";
import {
  assertResumable,
  type Checkpoint,
  type CheckpointMeta,
  checkpointHookFor,
  MACHINE_VERSION,
  workflowDefinitionHash,
} from "./checkpoint.ts";
import { errorFromOutput } from "./failure.ts";
import { assertToolSubsets, type ResolvedEscalation, resolveEscalation } from "./loop-controls.ts";
import { assertResumeMeta, assertWorkflowSnapshot } from "./snapshot-schema.ts";

/** Options of `WorkflowRunner`. */
export interface WorkflowRunnerOptions {
  client: LLMClient;
  /**
   * Compacts each run's history. A `ContextManager` gives every run a manager of its own
   * (`forRun`: its backend count, calibration and warnings), so runs under way at once never mix;
   * the copy keeps a subclass's overrides and the instance's own properties (an overridden
   * `maybeCompact` is what each run calls). A compactor without `forRun` is shared by every run.
   */
  contextManager: HistoryCompactor & { resetWarnings?: () => void };
  /** LLM calls per run, retries included. */
  maxIterations?: number;
  /** Consecutive text / unknown-tool failures tolerated (that many nudges; the next failure throws). */
  maxRetriesPerStep?: number;
  /** Consecutive failing tool batches tolerated. */
  maxToolErrors?: number;
  maxPrematureAttempts?: number;
  maxPrereqViolations?: number;
  stream?: boolean;
  /**
   * Which of the model's earlier reasoning blocks each request re-sends: `full` (default), `keep-last`
   * (only the latest) or `none`. The history keeps them all.
   */
  reasoningReplay?: ReasoningReplay;
  /**
   * When the context manager's usage crosses one of its `warnAt` fractions, tell the model with a
   * transient CONTEXT_WARNING user message on the next request (never kept in the history; it fires
   * again after a compaction brings usage back down). Default true; needs `warnAt` on the manager.
   */
  contextWarnings?: boolean;
  onChunk?: (chunk: StreamChunk) => Promise<void> | void;
  onMessage?: (message: Message) => void;
  /**
   * Observers of every run of this runner (see {@link RunObserver}); a run's own
   * (`RunOptions.observers`) are told after these.
   */
  observers?: readonly RunObserver[];
  /** Where an observer's first error in a run is logged, one line. Default `console.warn`. */
  logger?: ObserverLogger;
  rescueEnabled?: boolean;
  /**
   * How the model writes a call, read from its chat template (`callFormatFromTemplate`, or
   * `callFormatOfServer` for a running llama-server): the rescue reads it before the built-in
   * formats (docs/decisions/035-call-format-from-the-chat-template.md). Absent: built-in formats only.
   */
  callFormat?: TemplateCallFormat | undefined;
  /** Off: premature terminal calls and prerequisites are not enforced (for ablation). */
  stepEnforcement?: boolean;
  /**
   * What a batch with early calls gets: a terminal call while required steps are pending, or a
   * call whose prerequisites are unmet. `reject` (default): the whole batch is answered with step or
   * prerequisite nudges and nothing runs. `hold`: when the rest of the batch gives what the early
   * calls wait for (`[send_statement, get_account]`, `[get_account, list_invoices]` with
   * list_invoices needing get_account), the rest runs and each early call is held back, answered
   * `[StepEnforcementError] Held back: …` (STEP_NUDGE) or `[PrereqError] Held back: …`
   * (PREREQUISITE_NUDGE), asking for it again with values from the results; no premature attempt
   * or violation is counted (docs/decisions/039-hold-early-calls.md). Small models write the whole
   * plan in one answer; `hold` keeps the calls that can run instead of asking for them again.
   * @example
   * new WorkflowRunner({ client, contextManager, earlyCalls: "hold" })
   */
  earlyCalls?: "reject" | "hold";
  /**
   * When a run is cancelled while a tool runs, how long (ms) it waits for that call before it
   * settles: the tools' signal is aborted at once and no further call of the batch starts; a call
   * that returns within the grace is recorded as completed (its result in the history and
   * `completedSteps`), one still running after it as cancelled. `run()` rejects with
   * `WorkflowCancelledError` once the wait is over. Default 5000; 0 does not wait for a call in
   * flight.
   */
  cancelGraceMs?: number;
  /**
   * How many calls of one batch run at once (an integer ≥ 1). Default 1: one at a time, in order.
   * Above 1, calls start in batch order, up to this many at once, and their results are appended
   * in batch order whatever order they finish in; an `unsafe` tool's call still runs alone (it
   * starts once the calls before it finished, and the next starts once it did). The LLM calls
   * then ask for parallel tool calls (`SendOptions.parallelToolCalls`: `parallel_tool_calls: true`
   * on OpenAI-compatible servers, which llama-server needs to emit several calls per turn).
   * @example
   * new WorkflowRunner({ client, contextManager, toolConcurrency: 4 })
   */
  toolConcurrency?: number;
  /**
   * How long (ms) a tool call may run when its tool sets no `timeoutMs`. Past it the call's signal
   * is aborted and the model is answered `[ToolError] ToolTimeoutError: '<tool>' did not return
   * within N ms`, counted against `maxToolErrors` like any tool error; the run goes on. Default:
   * none.
   */
  toolTimeoutMs?: number;
  /**
   * Which tools each request offers. `all` (default): every tool of the workflow. `steps`: only
   * those that can make progress now: the required steps not done yet and their prerequisites;
   * once none is pending, the terminal tool and its prerequisites; plus `respond` when the workflow
   * has it. A tool that is none of these is never offered (add it with `activeTools`). A call to a
   * tool outside the request's tools gets the unknown-tool reply (`[UnknownTool]`, listing the
   * offered tools). Small models pick better among fewer tools (docs/decisions/018).
   * @example
   * new WorkflowRunner({ client, contextManager, toolSubsets: "steps" })
   */
  toolSubsets?: ToolSubsets;
  /**
   * Chooses each request's tools (after `toolSubsets`, whose subset it gets as `state.derived`):
   * return tool names of the workflow; calls to other tools are answered as unknown tools. A throw,
   * or a name that is not a tool (`WorkflowDefinitionError`), fails the run.
   * @example
   * activeTools: (state) => (state.iteration > 4 ? state.toolNames : state.derived)
   */
  activeTools?: ActiveTools;
  /**
   * A stronger client (or several, in rising `after` order) the loop switches to after `after`
   * consecutive failures of one kind (prose or unknown tools, tool errors, premature terminal
   * calls, unmet prerequisites: the guard counters). The next LLM call goes to the highest tier
   * the streak reaches; once the streak ends, calls go back to `client` unless the tier `stay`s.
   * Each call's client and every switch are recorded in the run's context (`context.escalation`,
   * so in every checkpoint) and the machine's output (`WorkflowOutput.escalation`). Pick `after`
   * below the budget it should rescue (`maxRetriesPerStep`, `maxToolErrors`, …), or the run fails
   * before it escalates.
   * @example
   * escalation: { after: 2, client: strongClient, name: "7b" }
   */
  escalation?: EscalationOption;
  retryNudge?: RetryNudge;
  /**
   * Asked to repair a response before the loop nudges about it: text rescue got no call from, or
   * calls that failed validation (an unknown tool, arguments that are not an object or do not fit
   * the tool's schema). Return the calls to run instead (validated like the model's) or `null` to
   * nudge; a throw fails the run with `ToolCallRepairError`.
   * @example
   * repairToolCall: ({ text, tools }) => (text.includes("Paris") ? [{ tool: "get_weather", args: { city: "Paris" } }] : null)
   */
  repairToolCall?: RepairToolCall;
  /**
   * Default true: the request after a prose answer, and each request after a premature terminal
   * call until a clean batch (it offers only the pending steps' tools, ADR 025), asks the client
   * for a tool call (`SendOptions.toolChoice: "required"`: `tool_choice` on OpenAI-compatible
   * servers and Anthropic; ignored by Ollama). Off: every request leaves the choice to the model.
   */
  forceToolChoiceOnRetry?: boolean;
  /** An inspector, e.g. `createBrowserInspector().inspect` from `@statelyai/inspect`. */
  inspect?: (event: InspectionEvent) => void;
}

/** Per-run options. */
export interface RunOptions {
  promptVars?: Record<string, string>;
  /** Prior history (multi-turn); it must hold the system prompt and the new user message. */
  initialMessages?: Message[];
  signal?: AbortSignal;
  /** Seeds deterministic tool-call ids (for comparing runs). */
  runId?: string;
  /** Persist each checkpoint of the run (see {@link Checkpoint}); awaited. */
  checkpoint?: Checkpoint;
  /**
   * A resumed run's `unsafe` call that an earlier process started and never finished: an
   * `OutcomeUnknown` tool error for the model (default) or a failed run (`OutcomeUnknownError`).
   */
  unsafeInterrupted?: "tool_error" | "fail";
  /**
   * Sent with each LLM call (`SendOptions.rank`): with a pooled client (`EndpointPool`), lower
   * waits less for a slot, FIFO within a rank (SlotWorker's order). Default: none (0).
   */
  rank?: number;
  /**
   * The same number under its old name (lower first), read when `rank` is absent; naming both
   * with different values rejects with `RankConflictError`.
   * @deprecated use rank (lower first)
   */
  priority?: number;
  /**
   * Observers of this run (after the runner's own): told of each state, message, LLM call, tool
   * call and compaction once, as it happens. One that throws never breaks the run (its first error
   * is logged, see `WorkflowRunnerOptions.logger`).
   */
  observers?: readonly RunObserver[];
}

/** The per-run options a run and a resumed run share. */
type DriveOptions = Pick<
  RunOptions,
  "signal" | "checkpoint" | "unsafeInterrupted" | "rank" | "priority" | "observers"
>;

/** Options of `resume`. */
export interface ResumeOptions extends DriveOptions {
  /**
   * The meta stored with the snapshot (from the checkpoint hook): checked against this runner's
   * workflow definition and machine version first, `CheckpointMismatchError` on a difference.
   */
  meta?: Pick<CheckpointMeta, "workflow" | "definitionHash" | "machineVersion"> &
    Partial<Pick<CheckpointMeta, "seq">>;
  /**
   * A person's decisions on the calls a run parked for (`AwaitingApprovalError.pending`): each
   * must name a pending, undecided call of the snapshot (`ApprovalNotPendingError`,
   * `ApprovalAlreadyDecidedError`; `ApprovalRunClosedError` for a run that is over). Once every
   * pending call is decided the batch runs, approved calls as usual and denied ones answered with
   * their reason; with some left undecided the run parks again (`AwaitingApprovalError`, its
   * snapshot holding the decisions so far).
   * @example
   * await runner.resume(workflow, parked.snapshot, { meta: parked.meta, decisions: [{ callId, approved: true }] });
   */
  decisions?: ApprovalDecision[];
}

/** Callbacks of a spawned workflow machine that see the original errors (they never enter its context). */
export interface WorkflowHooks
  extends Pick<
    WorkflowMachineDeps,
    "onActorError" | "onToolError" | "unsafeInterrupted" | "rank" | "priority"
  > {
  /** Observers of the spawned actors, after the runner's own (see {@link RunObserver}). */
  observers?: readonly RunObserver[];
  /** Persist each checkpoint of the spawned actor (see {@link Checkpoint}). */
  checkpoint?: Checkpoint;
  /**
   * The `seq` of the checkpoint the actor is restored from, when its snapshot does not carry it:
   * its checkpoints are numbered on from there. Default 0.
   */
  checkpointSeq?: number;
}

/**
 * Runs workflows against a client with guardrails and context management.
 * @example
 * const runner = new WorkflowRunner({ client, contextManager: new ContextManager({ strategy: new TieredCompact(), budgetTokens: 8192 }) });
 * const report = await runner.run(weatherWorkflow, "What's the weather in Paris?");
 */
export class WorkflowRunner {
  readonly options: Readonly<WorkflowRunnerOptions>;
  readonly #machines = new WeakMap<Workflow, { bound: BoundMachine; toolSpecs: ToolSpec[] }>();
  readonly #escalation: ResolvedEscalation | undefined;

  constructor(options: WorkflowRunnerOptions) {
    // Checked here, so a bad limit fails at construction and not at the first run.
    resolveLimits("WorkflowRunner", options);
    if (options.reasoningReplay !== undefined)
      assertReasoningReplay("WorkflowRunner", options.reasoningReplay);
    if (options.cancelGraceMs !== undefined)
      assertInteger("WorkflowRunner", "cancelGraceMs", options.cancelGraceMs, 0);
    if (options.toolConcurrency !== undefined)
      assertInteger("WorkflowRunner", "toolConcurrency", options.toolConcurrency, 1);
    if (options.toolTimeoutMs !== undefined)
      assertInteger("WorkflowRunner", "toolTimeoutMs", options.toolTimeoutMs, 1);
    if (options.toolSubsets !== undefined) assertToolSubsets("WorkflowRunner", options.toolSubsets);
    if (options.earlyCalls !== undefined && !["reject", "hold"].includes(options.earlyCalls))
      throw new RangeError(
        `WorkflowRunner: earlyCalls must be "reject" or "hold", got ${JSON.stringify(options.earlyCalls)}`,
      );
    if (options.activeTools !== undefined && typeof options.activeTools !== "function")
      throw new RangeError("WorkflowRunner: activeTools must be a function of the step state");
    this.#escalation =
      options.escalation === undefined ? undefined : resolveEscalation("WorkflowRunner", options.escalation);
    this.options = { ...options };
  }

  /** The run's limits as the machine's JSON config. */
  configFor(workflow: Workflow): WorkflowConfig {
    const { options } = this;
    return createWorkflowConfig({
      toolNames: Object.keys(workflow.tools),
      requiredSteps: workflow.requiredSteps,
      terminalTools: workflow.terminalTools,
      prerequisites: Object.fromEntries(
        Object.entries(workflow.tools)
          .filter(([, tool]) => tool.prerequisites.length > 0)
          .map(([name, tool]) => [name, tool.prerequisites]),
      ),
      ...resolveLimits("WorkflowRunner", options),
      rescueEnabled: options.rescueEnabled ?? true,
      stepEnforcement: options.stepEnforcement ?? true,
      ...(options.earlyCalls !== undefined && { earlyCalls: options.earlyCalls }),
      ...(options.cancelGraceMs !== undefined && { cancelGraceMs: options.cancelGraceMs }),
      ...(options.toolConcurrency !== undefined && { toolConcurrency: options.toolConcurrency }),
      ...(options.toolTimeoutMs !== undefined && { toolTimeoutMs: options.toolTimeoutMs }),
      forceToolChoiceOnRetry: options.forceToolChoiceOnRetry ?? true,
      ...(options.toolSubsets !== undefined && { toolSubsets: options.toolSubsets }),
      ...(this.#escalation && { escalation: this.#escalation.rules }),
      ...(options.callFormat && { callFormat: options.callFormat }),
    });
  }

  /**
   * A workflow statechart of its own, wired to this runner's client, context manager and
   * callbacks: for spawning workflow actors from an app machine (`spawnChild`). `run` and `resume`
   * share one machine per workflow instead. The machine gets a context manager of its own
   * (`forRun`, when the runner's has it), which the actors it makes share: call `machineFor` once
   * per actor that should count its history alone. Unlike `run`, it leaves the manager's tools as
   * they are (give the `ContextManager` `tools` to count them).
   */
  machineFor(workflow: Workflow, hooks: WorkflowHooks = {}): WorkflowMachine {
    const observer = this.#observerFor(hooks.observers);
    return createWorkflowMachine(this.#depsFor(workflow, hooks, this.#ownContextManager(), observer));
  }

  /** The runner's observers and a run's own as one (undefined when there are none). */
  #observerFor(own: readonly RunObserver[] | undefined): ObserverSet | undefined {
    const { observers = [], logger } = this.options;
    return createObserverSet(own?.length ? [...observers, ...own] : observers, logger);
  }

  /**
   * The runner's `forRun()` when it has one (its warnings, backend count and calibration are that
   * run's alone), else the runner's own, shared by every run.
   */
  #ownContextManager(): HistoryCompactor {
    const shared = this.options.contextManager;
    return shared.forRun?.() ?? shared;
  }

  /** The context manager of one `run` / `resume`, counting the workflow's tools with the history. */
  #contextManagerFor(workflow: Workflow): HistoryCompactor {
    const manager = this.#ownContextManager();
    manager.setTools?.(this.#machineOf(workflow).toolSpecs);
    return manager;
  }

  #depsFor(
    workflow: Workflow,
    hooks: WorkflowHooks,
    contextManager: HistoryCompactor,
    observer: ObserverSet | undefined,
  ): WorkflowMachineDeps {
    const { options } = this;
    const rank = resolveRank(hooks, "WorkflowHooks");
    return {
      ...(observer && { observer }),
      client: options.client,
      ...(this.#escalation && { escalationClients: this.#escalation.clients }),
      ...(options.activeTools && { activeTools: options.activeTools }),
      contextManager,
      toolSpecs: this.#machineOf(workflow).toolSpecs,
      tools: workflow.tools,
      stream: options.stream ?? false,
      ...(options.onChunk && { onChunk: options.onChunk }),
      ...(options.onMessage && { onMessage: options.onMessage }),
      ...(options.retryNudge !== undefined && { retryNudge: options.retryNudge }),
      ...(options.repairToolCall && { repairToolCall: options.repairToolCall }),
      ...(options.reasoningReplay !== undefined && { reasoningReplay: options.reasoningReplay }),
      ...(options.contextWarnings !== undefined && { contextWarnings: options.contextWarnings }),
      ...(hooks.onActorError && { onActorError: hooks.onActorError }),
      ...(hooks.onToolError && { onToolError: hooks.onToolError }),
      ...(hooks.checkpoint && {
        checkpoint: checkpointHookFor(workflow, hooks.checkpoint, hooks.checkpointSeq),
      }),
      ...(hooks.unsafeInterrupted && { unsafeInterrupted: hooks.unsafeInterrupted }),
      ...(rank !== undefined && { rank }),
    };
  }

  // One bound machine and tool list per workflow, built on its first run.
  #machineOf(workflow: Workflow): { bound: BoundMachine; toolSpecs: ToolSpec[] } {
    let entry = this.#machines.get(workflow);
    if (entry === undefined) {
      entry = { bound: new BoundMachine(), toolSpecs: workflowToolSpecs(workflow) };
      this.#machines.set(workflow, entry);
    }
    return entry;
  }

  /**
   * The input a workflow actor starts from: the seeded history (checked: `InvalidMessageError`
   * naming the field when it is not a list of messages), or a fresh system prompt and user
   * message (which are reported to `onMessage`, as messages of this run).
   */
  inputFor(
    workflow: Workflow,
    userMessage: string,
    runOptions: Omit<RunOptions, "signal"> = {},
  ): WorkflowInput {
    return this.#inputFor(workflow, userMessage, runOptions, this.#observerFor(runOptions.observers));
  }

  #inputFor(
    workflow: Workflow,
    userMessage: string,
    runOptions: Omit<RunOptions, "signal">,
    observer: ObserverSet | undefined,
  ): WorkflowInput {
    let messages: Message[];
    if (runOptions.initialMessages) {
      messages = [...assertMessages(runOptions.initialMessages, "initialMessages")];
    } else {
      messages = [
        createMessage(MessageRole.SYSTEM, renderSystemPrompt(workflow.systemPrompt, runOptions.promptVars), {
          type: MessageType.SYSTEM_PROMPT,
        }),
        createMessage(MessageRole.USER, userMessage, { type: MessageType.USER_INPUT }),
      ];
      for (const message of messages) {
        this.options.onMessage?.(message);
        observer?.onMessage(message);
      }
    }
    return {
      config: this.configFor(workflow),
      messages,
      ...(runOptions.runId !== undefined && { runId: runOptions.runId }),
    };
  }

  /**
   * Run a workflow; resolves with the terminal tool's return value or rejects with a typed error
   * (`InvalidMessageError` for `initialMessages` that are not messages, `RankConflictError` for a
   * `rank` and a `priority` that differ, before anything runs).
   */
  async run(workflow: Workflow, userMessage: string, runOptions: RunOptions = {}): Promise<unknown> {
    resolveRank(runOptions, "WorkflowRunner.run");
    const { initialMessages } = runOptions;
    if (runOptions.signal?.aborted) {
      throw new WorkflowCancelledError(
        initialMessages ? [...assertMessages(initialMessages, "initialMessages")] : [],
        [],
        0,
      );
    }
    // A manager without forRun is shared by every run: its warnings start again with each.
    if (!this.options.contextManager.forRun) this.options.contextManager.resetWarnings?.();
    const observer = this.#observerFor(runOptions.observers);
    const input = this.#inputFor(workflow, userMessage, runOptions, observer);
    return this.#drive(workflow, { input }, runOptions, observer);
  }

  /**
   * Resume a run from a persisted snapshot (`actor.getPersistedSnapshot()`, JSON round-tripped).
   * The snapshot and `meta` are checked first: `InvalidSnapshotError` naming the damaged field
   * (e.g. `context.iteration`), `CheckpointMismatchError` for another workflow or machine version,
   * `RankConflictError` for a `rank` and a `priority` that differ.
   */
  async resume(
    workflow: Workflow,
    snapshot: Snapshot<unknown>,
    runOptions: ResumeOptions = {},
  ): Promise<unknown> {
    resolveRank(runOptions, "WorkflowRunner.resume");
    if (runOptions.meta) assertResumable(workflow, assertResumeMeta(runOptions.meta));
    assertWorkflowSnapshot(snapshot);
    const decisions = runOptions.decisions ?? [];
    if (decisions.length > 0) assertDecisionsFit(snapshot, decisions);
    return this.#drive(
      workflow,
      { snapshot },
      { ...runOptions, decisions },
      this.#observerFor(runOptions.observers),
      runOptions.meta?.seq,
    );
  }

  async #drive(
    workflow: Workflow,
    start: ActorStart,
    runOptions: DriveOptions & Pick<ResumeOptions, "decisions">,
    observer: ObserverSet | undefined,
    checkpointSeq?: number,
  ): Promise<unknown> {
    const { signal } = runOptions;
    const rank = resolveRank(runOptions, "RunOptions");
    let actorError: unknown;
    const toolErrors = new Map<string, unknown>();
    const deps = this.#depsFor(
      workflow,
      {
        onActorError: (error) => (actorError = error),
        onToolError: (callId, error) => toolErrors.set(callId, error),
        ...(runOptions.checkpoint && { checkpoint: runOptions.checkpoint }),
        ...(checkpointSeq !== undefined && { checkpointSeq }),
        ...(runOptions.unsafeInterrupted && { unsafeInterrupted: runOptions.unsafeInterrupted }),
        ...(rank !== undefined && { rank }),
      },
      this.#contextManagerFor(workflow),
      observer,
    );
    // A snapshot carries its own context, so no input is needed when resuming.
    const { bound } = this.#machineOf(workflow);
    const actor = bound.createActor(deps, start, this.options.inspect);
    // A snapshot that names an unknown state restores into an errored actor without a context: its
    // run id is then the snapshot's own (checked by assertWorkflowSnapshot).
    const contextOf = (snapshot: unknown) => (snapshot as { context?: { runId: string } }).context;
    const runId =
      contextOf(actor.getSnapshot())?.runId ??
      ("snapshot" in start ? contextOf(start.snapshot)?.runId : "") ??
      "";
    const decisions = runOptions.decisions ?? [];
    observer?.onRunStart({
      runId,
      machine: bound.machine,
      resumed: "snapshot" in start,
      workflow: workflow.name,
      ...(decisions.length > 0 && { decisions }),
    });
    let cancelSent = false;
    const cancel = () => {
      if (cancelSent) return;
      cancelSent = true;
      actor.send({ type: "workflow.cancel" });
    };
    signal?.addEventListener("abort", cancel, { once: true });
    try {
      const settled = settleOrPark(actor, decisions, deps.checkpoint);
      if (signal?.aborted) cancel();
      let end: Awaited<typeof settled>;
      try {
        end = await settled;
      } catch (error) {
        observer?.onRunEnd({ runId, status: "failed", error });
        throw error;
      }
      if (end.kind === "parked") {
        const parked = new AwaitingApprovalError({
          runId: end.runId,
          approval: end.approval,
          pending: undecidedCalls(end.approval),
          snapshot: end.snapshot,
          meta: {
            workflow: workflow.name,
            definitionHash: workflowDefinitionHash(workflow),
            machineVersion: MACHINE_VERSION,
          },
        });
        observer?.onRunEnd({ runId, status: "awaiting_approval", error: parked });
        throw parked;
      }
      const output: WorkflowOutput = end.output;
      if (output.status === "done") {
        observer?.onRunEnd({ runId, status: "done", result: output.result, error: null });
        return output.result;
      }
      const error = errorFromOutput(output, actorError, toolErrors);
      // A settled workflow actor's status is final ("running" only while it runs).
      observer?.onRunEnd({ runId, status: output.status as RunEndEvent["status"], error });
      throw error;
    } finally {
      signal?.removeEventListener("abort", cancel);
    }
  }
}

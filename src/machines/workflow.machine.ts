/**
 * The guarded agentic loop as a statechart: compact → infer → validate → enforce → (approve) →
 * execute, looping until a terminal tool succeeds, with final states done / failed / cancelled
 * (and responded, for the proxy's inference-only front half).
 */
import { type ActorRefFrom, type AnyActorRef, and, assign, type SnapshotFrom, sendTo, setup } from "xstate";
import { type ApprovalState, decideApprovals, isFullyDecided } from "../core/approval.ts";
import type { Message } from "../core/messages.ts";
import { resolveRank } from "../core/rank.ts";
import type { RunStateName } from "../core/run-observer.ts";
import type { LLMResponse, TokenUsage } from "../core/types.ts";
import type { Decision } from "../guardrails/decisions.ts";
import { buildRetryNudge } from "../guardrails/response-validator.ts";
import { stepSummaryHint } from "../guardrails/step-state.ts";
import {
  type ApprovalScreenDeps,
  createApprovalScreenLogic,
  createInferenceLogic,
  createToolExecutionLogic,
  type InferenceDeps,
  type ToolExecutionDeps,
  type ToolExecutionRequest,
} from "./workflow-actors.ts";
import {
  createWorkflowContext,
  DEFAULT_CANCEL_GRACE_MS,
  type ToolOutcome,
  type WorkflowContext,
  type WorkflowInput,
  type WorkflowStatus,
} from "./workflow-context.ts";
import type {
  WorkflowDepsLookup,
  WorkflowEvent,
  WorkflowMachineDeps,
  WorkflowOutput,
} from "./workflow-deps.ts";
import * as update from "./workflow-updates.ts";

export type {
  HistoryCompactor,
  WorkflowDepsLookup,
  WorkflowEvent,
  WorkflowMachineDeps,
  WorkflowOutput,
} from "./workflow-deps.ts";

/**
 * Build the workflow statechart for a client, a context manager and a tool set, or, given a
 * lookup, once for many actors that each find their own deps (the same statechart either way).
 *
 * Each pass: compact → infer → validate → enforce → execute → review, through `approve` first when
 * a call of the batch names a tool that declares `needsApproval`. What happens next is
 * decided once per pass by the decision core (guardrails/decisions.ts) into `context.decision`;
 * the states branch on its kind, the actions apply it (workflow-updates.ts).
 * @throws RankConflictError when the deps name `rank` and its deprecated alias `priority` with
 * different values.
 * @example
 * const actor = createActor(createWorkflowMachine(deps), { input: { config, messages } });
 * actor.start();
 * const output = await toPromise(actor);
 */
export function createWorkflowMachine(deps: WorkflowMachineDeps | WorkflowDepsLookup) {
  // Plain deps are checked now; a lookup's deps when a run first calls the LLM.
  if (typeof deps !== "function") resolveRank(deps, DEPS_OWNER);
  const depsOf: WorkflowDepsLookup = typeof deps === "function" ? deps : () => deps;
  return setup({
    types: {
      context: {} as WorkflowContext,
      input: {} as WorkflowInput,
      events: {} as WorkflowEvent,
      output: {} as WorkflowOutput,
    },
    actors: {
      // Derived once per deps (an actor's), not per request: the workers ask for them every call.
      inference: createInferenceLogic(
        (workflow) => derived(depsOf(workflow), inferenceDepsCache, inferenceDepsOf),
        { historyInParent: true },
      ),
      executeTools: createToolExecutionLogic(
        (workflow) => derived(depsOf(workflow), toolDepsCache, toolExecutionDepsOf),
        { restoreRequest: restoredToolRequest },
      ),
      screenApproval: createApprovalScreenLogic((workflow) =>
        derived(depsOf(workflow), screenDepsCache, approvalScreenDepsOf),
      ),
    },
    delays: {
      cancelGrace: ({ context }) => context.config.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS,
    },
    guards: {
      decided: ({ context }, params: { kind: Decision["kind"] }) => context.decision?.kind === params.kind,
      iterationsExhausted: ({ context }) => context.iteration >= context.config.maxIterations,
      isInferenceOnly: ({ context }) => context.config.inferenceOnly,
      needsScreening: ({ context }) => context.needsScreening === true,
      awaitsApproval: (_, params: { approval: ApprovalState | null }) => params.approval !== null,
      approvalDecided: ({ context }) => context.approval != null && isFullyDecided(context.approval),
    },
    actions: {
      // The one side effect of the pass's start: the ContextManager compacts (and fires its callbacks).
      startIteration: assign(({ context, self }) => {
        const { contextManager, contextWarnings, activeTools } = depsOf(self);
        const messages = contextManager.maybeCompact(
          context.messages,
          context.iteration,
          stepSummaryHint(context.progress),
        );
        // Told here, where the compaction happens: the history before it is gone after this pass.
        const { observer } = depsOf(self);
        if (observer) {
          const measure = contextManager.takeCompaction?.();
          if (messages !== context.messages) {
            observer.onCompaction({
              runId: context.runId,
              iteration: context.iteration + 1,
              before: context.messages,
              after: messages,
              ...(measure && { measure }),
            });
          }
        }
        const warnings = contextWarnings === false ? [] : (contextManager.takeWarnings?.() ?? []);
        return {
          ...update.chooseToolsAndClient(context, activeTools),
          messages: Object.freeze(messages) as Message[],
          iteration: context.iteration + 1,
          contextWarning: update.contextWarningOf(warnings),
        };
      }),
      requestInference: sendTo("inference", ({ context }) => ({
        type: "request" as const,
        request: update.inferenceRequest(context),
      })),
      requestTools: sendTo("executeTools", ({ context }) => ({
        type: "request" as const,
        request: update.toolRequest(context),
      })),
      // Aborts the tools' signal; the batch still answers with the calls that finished.
      abortTools: sendTo("executeTools", { type: "abort" as const }),
      decideOnResponse: assign(({ context, event, self }) =>
        update.decideOnResponse(context, responseOf(event), depsOf(self).toolSpecs),
      ),
      decideOnEnforcement: assign(({ context }) => update.decideOnEnforcement(context)),
      noteScreening: assign(({ context, self }) => update.noteScreening(context, depsOf(self).tools)),
      appendRetry: assign(({ context, self }) => {
        const raw = context.decision?.kind === "retry" ? context.decision.raw : "";
        return update.appendRetry(
          context,
          buildRetryNudge(raw, depsOf(self).retryNudge, update.offeredToolNames(context)),
        );
      }),
      appendRejection: assign(({ context, self }) => update.appendRejection(context, depsOf(self).toolSpecs)),
      appendToolCall: assign(({ context }) => update.appendToolCall(context)),
      markStarted: assign(({ context, event }) =>
        event.type === "tools.started" ? update.markStarted(context, event.callId) : {},
      ),
      keepOutcome: assign(({ context, event }) =>
        event.type === "tools.outcome" ? update.keepOutcome(context, event.outcome) : {},
      ),
      recordBatch: assign(({ context, event }) => update.recordBatch(context, outcomesOf(event))),
      keepBatchOutcomes: assign(({ event }) => ({ outcomes: outcomesOf(event) })),
      keepApprovalRequest: assign((_, params: { approval: ApprovalState | null }) => ({
        approval: params.approval,
      })),
      keepDecisions: assign(({ context, event }) =>
        event.type === "approval.decide" && context.approval
          ? { approval: decideApprovals(context.approval, event.decisions) }
          : {},
      ),
      clearApproval: assign({ approval: null }),
      closeOpenCalls: assign(({ context }) => update.closeOpenCalls(context)),
      failWithDecision: assign(({ context }) => update.failWith(context)),
      failMaxIterations: assign(({ context }) => update.failMaxIterations(context)),
      failFromActor: assign((_, params: { source: "inference" | "tools"; error: unknown }) => ({
        failure: update.describeActorError(params.error, params.source),
      })),
      // Side effects, after the assign they follow: onMessage hears what was appended, in order.
      reportAppended: ({ context, self }) => {
        const { onMessage, observer } = depsOf(self);
        if ((!onMessage && !observer) || context.appended === 0) return;
        const position = observer && { runId: context.runId, iteration: context.iteration };
        for (const message of context.messages.slice(-context.appended)) {
          onMessage?.(message);
          observer?.onMessage(message, position);
        }
      },
      // Denied calls never reach the tools worker's observer hooks: told here, as they are decided.
      reportDenied: ({ context, self }) => {
        const { observer } = depsOf(self);
        if (!observer) return;
        for (const result of update.deniedToolResults(context)) observer.onToolResult(result);
      },
      reportState: ({ context, self }, params: { state: RunStateName }) => {
        depsOf(self).observer?.onState({
          state: params.state,
          runId: context.runId,
          iteration: context.iteration,
        });
      },
      reportActorError: ({ event, self }) => {
        if ("error" in event) depsOf(self).onActorError?.(event.error);
      },
      markStatus: assign((_, params: { status: WorkflowStatus }) => ({ status: params.status })),
    },
  }).createMachine({
    id: "workflow",
    context: ({ input }) => createWorkflowContext(input),
    initial: "compact",
    // Two workers for the whole run; each state that needs one sends it a request.
    invoke: [
      { id: "inference", src: "inference" },
      { id: "executeTools", src: "executeTools" },
    ],
    on: {
      "workflow.cancel": { target: ".cancelled", actions: ["closeOpenCalls", "reportAppended"] },
    },
    states: {
      compact: {
        description:
          "Start a pass: fail once maxIterations LLM calls were made, else compact the history and count the call.",
        entry: reported("compact"),
        always: [
          { guard: "iterationsExhausted", target: "failed", actions: "failMaxIterations" },
          { target: "infer", actions: "startIteration" },
        ],
      },
      infer: {
        description: "One LLM call through the inference worker; its answer is decided on at once.",
        entry: [reported("infer"), "requestInference"],
        on: {
          "inference.done": { target: "validate", actions: "decideOnResponse" },
          "inference.error": { target: "failed", actions: actorFailure("inference") },
        },
      },
      validate: {
        description:
          "Text gets a retry nudge (user channel); unknown tools and malformed arguments reject the batch on the tool channel; an exhausted budget fails the run.",
        entry: reported("validate"),
        always: [
          { guard: decided("retry"), target: "compact", actions: ["appendRetry", "reportAppended"] },
          {
            guard: decided("unknown_tools"),
            target: "compact",
            actions: ["appendRejection", "reportAppended"],
          },
          {
            guard: decided("malformed_args"),
            target: "compact",
            actions: ["appendRejection", "reportAppended"],
          },
          { guard: and([decided("accept"), "isInferenceOnly"]), target: "responded" },
          { guard: decided("accept"), target: "enforce", actions: ["decideOnEnforcement", "noteScreening"] },
          { target: "failed", actions: ["failWithDecision", "reportAppended"] },
        ],
      },
      enforce: {
        description:
          "A premature terminal call or unmet prerequisites reject the batch with a nudge; an exhausted budget fails the run.",
        entry: reported("enforce"),
        always: [
          {
            guard: and([decided("execute"), "needsScreening"]),
            target: "approve",
            actions: ["appendToolCall", "reportAppended"],
          },
          { guard: decided("execute"), target: "execute", actions: ["appendToolCall", "reportAppended"] },
          { guard: decided("premature"), target: "compact", actions: ["appendRejection", "reportAppended"] },
          {
            guard: decided("prerequisite"),
            target: "compact",
            actions: ["appendRejection", "reportAppended"],
          },
          { target: "failed", actions: "failWithDecision" },
        ],
      },
      approve: {
        description:
          "The batch names a tool that declares needsApproval: the approval screen asks which calls wait for a person. Some do: the run waits in awaitingApproval before any call of the batch runs; none do: the batch runs.",
        entry: reported("approve"),
        invoke: {
          id: "screenApproval",
          src: "screenApproval",
          input: ({ context }) => update.screenRequest(context),
          onDone: [
            {
              guard: { type: "awaitsApproval", params: ({ event }) => ({ approval: event.output }) },
              target: "awaitingApproval",
              actions: { type: "keepApprovalRequest", params: ({ event }) => ({ approval: event.output }) },
            },
            { target: "execute" },
          ],
          onError: { target: "failed", actions: actorFailure("tools") },
        },
      },
      execute: {
        description:
          "Run the batch through the tools worker (denied calls answered in place); outcomes are kept as calls finish, then recorded with the batch.",
        entry: [reported("execute"), "requestTools"],
        on: {
          "tools.started": { actions: "markStarted" },
          "tools.outcome": { actions: "keepOutcome" },
          "tools.done": { target: "review", actions: ["recordBatch", "clearApproval", "reportAppended"] },
          "tools.error": { target: "failed", actions: actorFailure("tools") },
          "workflow.cancel": { target: "cancelling" },
        },
      },
      awaitingApproval: {
        description:
          "Calls of the batch wait for a person (their tools' needsApproval); nothing of the batch ran. The runner ends its attempt here with the pending calls and a snapshot; once every pending call is decided (approval.decide), the batch runs: approved calls as usual, denied ones answered with the reason (status denied, told to observers now).",
        entry: reported("awaitingApproval"),
        always: { guard: "approvalDecided", target: "execute", actions: "reportDenied" },
        on: {
          "approval.decide": { actions: "keepDecisions" },
        },
      },
      cancelling: {
        description:
          "Cancelled while tools ran: their signal is aborted and no further call starts; the call in flight has the grace (cancelGraceMs) to return, and is recorded as completed if it does, as cancelled if not.",
        entry: [reported("cancelling"), "abortTools"],
        after: {
          cancelGrace: { target: "cancelled", actions: ["closeOpenCalls", "reportAppended"] },
        },
        on: {
          "tools.started": { actions: "markStarted" },
          "tools.outcome": { actions: "keepOutcome" },
          "tools.done": {
            target: "cancelled",
            actions: ["keepBatchOutcomes", "closeOpenCalls", "reportAppended"],
          },
          "tools.error": { target: "cancelled", actions: ["closeOpenCalls", "reportAppended"] },
          "workflow.cancel": { actions: [] },
        },
      },
      review: {
        description:
          "A terminal success finishes the run; an exhausted tool-error budget fails it; else loop.",
        entry: reported("review"),
        always: [
          { guard: decided("finish"), target: "done" },
          { guard: decided("tool_errors_exhausted"), target: "failed", actions: "failWithDecision" },
          { target: "compact" },
        ],
      },
      done: {
        description: "A terminal tool succeeded; `result` is its value.",
        type: "final",
        entry: [reported("done"), { type: "markStatus", params: { status: "done" } }],
      },
      failed: {
        description: "A budget ran out or an actor failed; `failure` says which.",
        type: "final",
        entry: [reported("failed"), { type: "markStatus", params: { status: "failed" } }],
      },
      cancelled: {
        description: "Cancelled from outside; every open call got an answer.",
        type: "final",
        entry: [reported("cancelled"), { type: "markStatus", params: { status: "cancelled" } }],
      },
      responded: {
        description: "Inference-only runs (the proxy's front half) stop at the first valid batch.",
        type: "final",
        entry: [reported("responded"), { type: "markStatus", params: { status: "responded" } }],
      },
    },
    output: ({ context }) => ({
      status: context.status,
      result: context.result,
      failure: context.failure,
      // A copy: the context's history is frozen (see appendMessages), the caller's is theirs to edit.
      messages: [...context.messages],
      iteration: context.iteration,
      completedSteps: context.progress.completedSteps,
      ...(context.escalation && { escalation: context.escalation }),
      toolCalls: context.status === "responded" ? update.decidedCalls(context) : null,
    }),
  });
}

/** The workflow machine type. */
export type WorkflowMachine = ReturnType<typeof createWorkflowMachine>;
/** A running workflow actor. */
export type WorkflowActor = ActorRefFrom<WorkflowMachine>;
/** A workflow actor's snapshot. */
export type WorkflowSnapshot = SnapshotFrom<WorkflowMachine>;

/** How a rank conflict names the deps (`RankConflictError`). */
const DEPS_OWNER = "WorkflowMachineDeps";

const inferenceDepsCache = new WeakMap<WorkflowMachineDeps, InferenceDeps>();
const toolDepsCache = new WeakMap<WorkflowMachineDeps, ToolExecutionDeps>();
const screenDepsCache = new WeakMap<WorkflowMachineDeps, ApprovalScreenDeps>();

function derived<T>(
  deps: WorkflowMachineDeps,
  cache: WeakMap<WorkflowMachineDeps, T>,
  derive: (deps: WorkflowMachineDeps) => T,
): T {
  let value = cache.get(deps);
  if (value === undefined) {
    value = derive(deps);
    cache.set(deps, value);
  }
  return value;
}

/** What the inference worker needs of a run's deps; the context manager hears the backend's counts. */
function inferenceDepsOf(deps: WorkflowMachineDeps): InferenceDeps {
  const { client, toolSpecs, stream, onChunk, reasoningReplay, checkpoint, contextManager } = deps;
  const { repairToolCall, observer, escalationClients } = deps;
  const rank = resolveRank(deps, DEPS_OWNER);
  const observe = contextManager.observeUsage?.bind(contextManager);
  return {
    ...(checkpoint && { checkpoint }),
    ...(observe && {
      onUsage: (history: readonly Message[], usage: TokenUsage) => observe(history, usage.promptTokens),
    }),
    client,
    ...(escalationClients && { escalationClients }),
    toolSpecs,
    stream: stream ?? false,
    ...(onChunk && { onChunk }),
    ...(reasoningReplay && { reasoningReplay }),
    ...(rank !== undefined && { rank }),
    ...(repairToolCall && { repairToolCall }),
    ...(observer && { observer }),
  };
}

/** What the tools worker needs of a run's deps. */
function toolExecutionDepsOf(deps: WorkflowMachineDeps): ToolExecutionDeps {
  const { tools, onToolError, checkpoint, unsafeInterrupted, observer } = deps;
  return {
    tools: tools ?? {},
    ...(onToolError && { onToolError }),
    ...(checkpoint && { checkpoint }),
    ...(unsafeInterrupted && { unsafeInterrupted }),
    ...(observer && { observer }),
  };
}

/** What the approval screen needs of a run's deps. */
function approvalScreenDepsOf(deps: WorkflowMachineDeps): ApprovalScreenDeps {
  return { tools: deps.tools ?? {} };
}

/**
 * The batch in flight of a restored snapshot, rebuilt from the workflow's context: the calls that
 * finished and how often each started since the request was sent (a snapshot of version 4 or
 * older kept only the calls). Without a workflow parent, the kept request.
 */
function restoredToolRequest(request: ToolExecutionRequest, parent: AnyActorRef | undefined) {
  const context = (parent?.getSnapshot() as { context?: WorkflowContext } | undefined)?.context;
  return context ? update.toolRequest(context) : request;
}

/** The entry action that tells the run's observers the state was entered. */
function reported(state: RunStateName) {
  return { type: "reportState" as const, params: { state } };
}

function decided(kind: Decision["kind"]) {
  return { type: "decided" as const, params: { kind } };
}

function actorFailure(source: "inference" | "tools") {
  return [
    {
      type: "failFromActor" as const,
      params: ({ event }: { event: object }) => ({ source, error: errorOf(event) }),
    },
    "reportActorError" as const,
  ];
}

function responseOf(event: WorkflowEvent): LLMResponse {
  return event.type === "inference.done" ? event.output : { content: "" };
}

function errorOf(event: object): unknown {
  return "error" in event ? event.error : undefined;
}

function outcomesOf(event: WorkflowEvent): ToolOutcome[] {
  return event.type === "tools.done" ? event.output : [];
}

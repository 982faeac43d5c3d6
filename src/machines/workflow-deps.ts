/**
 * The workflow machine's outside: what it is built with (deps that never enter the context), the
 * events it accepts and what a finished actor reports. Types only.
 */
import type { AnyActorRef } from "xstate";
import type { ThresholdEvent } from "../context/context-manager.ts";
import type { ApprovalDecision } from "../core/approval.ts";
import type { Message } from "../core/messages.ts";
import type { ReasoningReplay } from "../core/reasoning-replay.ts";
import type { CompactionMeasure, ObserverSet } from "../core/run-observer.ts";
import type { ToolDef, ToolSpec } from "../core/tools.ts";
import type { LLMClient, LLMResponse, StreamChunk, ToolCall } from "../core/types.ts";
import type { EscalationRecord } from "../guardrails/escalation.ts";
import type { RepairToolCall } from "../guardrails/repair.ts";
import type { RetryNudge } from "../guardrails/response-validator.ts";
import type { ActiveTools } from "../guardrails/tool-subset.ts";
import type { CheckpointHook } from "./workflow-actors.ts";
import type { ToolOutcome, WorkflowFailure, WorkflowStatus } from "./workflow-context.ts";

/** Anything that compacts a history once per iteration (a `ContextManager`). */
export interface HistoryCompactor {
  maybeCompact(messages: Message[], stepIndex?: number, stepHint?: string): Message[];
  /** Warnings fired since the last call (ContextManager's `warnAt`), for the model to hear about. */
  takeWarnings?(): readonly ThresholdEvent[];
  /** The last compaction's measure since the last call (`ContextManager.takeCompaction`). */
  takeCompaction?(): CompactionMeasure | undefined;
  /** The backend's prompt tokens for a history sent: the count compaction decides on from then on. */
  observeUsage?(sent: readonly Message[], promptTokens: number): void;
  /** The tools offered with every request, counted with the history. */
  setTools?(tools: readonly ToolSpec[]): void;
  /**
   * A compactor with the same settings and state of its own, for one run (`ContextManager.forRun`):
   * the runner takes one per run when it is there, else every run shares this one.
   */
  forRun?(): HistoryCompactor;
}

/** Behaviour the machine is built with: clients, tools and callbacks never enter the context. */
export interface WorkflowMachineDeps {
  client: LLMClient;
  /**
   * The clients of the escalation tiers, in the order of `config.escalation`: a call the tier
   * chooses (`context.escalation.tier` ≥ 1) goes to `escalationClients[tier - 1]`.
   */
  escalationClients?: readonly LLMClient[];
  /** Chooses each request's tools (after `config.toolSubsets`); see `ActiveTools`. */
  activeTools?: ActiveTools;
  contextManager: HistoryCompactor;
  /** The tools the model is offered. */
  toolSpecs: readonly ToolSpec[];
  /** Implementations by name; not needed for an inference-only machine. */
  tools?: Readonly<Record<string, ToolDef>>;
  stream?: boolean;
  /**
   * Tell the model when the context crosses a `warnAt` fraction (a transient CONTEXT_WARNING user
   * message on the next request, not kept in the history); default true.
   */
  contextWarnings?: boolean;
  /** Which earlier reasoning blocks each request re-sends (`full`, `keep-last`, `none`); default `full`. */
  reasoningReplay?: ReasoningReplay;
  onChunk?: (chunk: StreamChunk) => Promise<void> | void;
  onMessage?: (message: Message) => void;
  /** The run's observers as one (`createObserverSet`): told of states, messages, calls and compactions. */
  observer?: ObserverSet;
  retryNudge?: RetryNudge;
  /**
   * Asked, before a nudge, to repair a response whose text held no readable call or whose calls
   * failed validation (unknown tool, undecodable or schema-invalid arguments); its calls are
   * decided on like the model's. A throw fails the run with `ToolCallRepairError`.
   */
  repairToolCall?: RepairToolCall;
  /** Receives the original error when an invoked actor (client or tools) fails the run. */
  onActorError?: (error: unknown) => void;
  /** Receives what a tool threw (the `cause` of a later ToolExecutionError), by call id. */
  onToolError?: (callId: string, error: unknown) => void;
  /**
   * Persist the actor's snapshot: awaited before each LLM call, before each tool batch, and before
   * and after each call, so a run resumed from the last one redoes at most the step
   * under way (finished calls are never re-run). A rejection fails the run.
   */
  checkpoint?: CheckpointHook;
  /** A resumed run's interrupted `unsafe` call: an `OutcomeUnknown` tool error (default) or a failed run. */
  unsafeInterrupted?: "tool_error" | "fail";
  /** Sent with each LLM call (`SendOptions.rank`): lower waits less for a pooled client's slot. */
  rank?: number;
  /**
   * The same number under its old name (lower first), read when `rank` is absent. Both with
   * different values are a `RankConflictError`: `createWorkflowMachine` throws it for plain deps,
   * a lookup's deps fail the run with it before its first LLM call.
   * @deprecated use rank (lower first)
   */
  priority?: number;
}

/**
 * Finds a workflow actor's deps, for a machine built once and run by many actors with different
 * clients and callbacks (the proxy): the deps stay out of the JSON context and snapshot.
 */
export type WorkflowDepsLookup = (workflow: AnyActorRef) => WorkflowMachineDeps;

/**
 * Events the workflow actor accepts: `workflow.cancel` and `approval.decide` from outside (a
 * decision's call must be pending and undecided: check with `decideApprovals` first), and the
 * answers of its two request workers (`inference.*`, `tools.*`), which only those workers send.
 * `tools.done` carries the batch's outcomes in batch order (the approval screen answers with its
 * own done event: it is an invoked actor of the `approve` state).
 */
export type WorkflowEvent =
  | { type: "workflow.cancel" }
  | { type: "approval.decide"; decisions: ApprovalDecision[] }
  | { type: "inference.done"; output: LLMResponse }
  | { type: "inference.error"; error: unknown }
  | { type: "tools.started"; callId: string }
  | { type: "tools.outcome"; outcome: ToolOutcome }
  | { type: "tools.done"; output: ToolOutcome[] }
  | { type: "tools.error"; error: unknown };

/** What a finished workflow actor reports. */
export interface WorkflowOutput {
  status: WorkflowStatus;
  result: unknown;
  failure: WorkflowFailure | null;
  messages: Message[];
  iteration: number;
  completedSteps: string[];
  /** Which client served each LLM call and the escalations (runs with `config.escalation`). */
  escalation?: EscalationRecord;
  /** The accepted batch of an inference-only run. */
  toolCalls: ToolCall[] | null;
}

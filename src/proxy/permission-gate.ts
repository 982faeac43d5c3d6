/**
 * The permission policy on the proxy's guarded path (ADR 021): a validated batch with a call the
 * policy denies never reaches the client. The batch goes back to the model as a rejected one (its
 * calls, then a `[Denied]` reply to each denied call and a `[NotRun]` reply to the others, sent
 * upstream only, as the loop's other nudges), and the model chooses again within the request's
 * retry budget; when the budget is spent, the answer is a text refusal.
 */
import { homedir } from "node:os";
import { createMessage, type Message, MessageRole, MessageType } from "../core/messages.ts";
import type { ToolCall } from "../core/types.ts";
import {
  checkPermission,
  type PermissionPlaces,
  type PermissionPolicy,
} from "../guardrails/permission-policy.ts";
import type { InferenceResult } from "../loop/inference.ts";
import { deniedCallNudge, permissionRefusal } from "../prompts/guard-nudges.ts";
import { notRunNudge } from "../prompts/nudges.ts";
import type { RequestStats } from "./request-stats.ts";

/** A call the policy denied, and why. */
export interface DeniedCall {
  tool: string;
  reason: string;
}

/** What a permitted inference ends with: an allowed batch, or the refusal that ends the turn. */
export type PermittedResult =
  | { kind: "allowed"; result: InferenceResult }
  | { kind: "refused"; message: string };

/** Options of `inferPermitted`. */
export interface InferPermittedOptions {
  policy: PermissionPolicy;
  messages: Message[];
  maxRetries: number;
  /** Tools never denied (the injected `respond`: a text answer is always allowed). */
  alwaysAllowed: readonly string[];
  /** One inference (`runInference`) over `messages` with `maxRetries` retries. */
  infer(messages: Message[], maxRetries: number): Promise<InferenceResult>;
  /** Told of each batch's denied calls and the messages added for the retry. */
  onDenied?(denied: readonly DeniedCall[], added: readonly Message[]): void;
}

/**
 * Infer until the model chooses a batch the policy allows, or the request's budget of
 * `maxRetries + 1` LLM calls is spent (a denial uses up the calls that led to it).
 */
export async function inferPermitted(options: InferPermittedOptions): Promise<PermittedResult> {
  const places = placesOf(options.policy);
  const denials: DeniedCall[] = [];
  let messages = options.messages;
  let retries = options.maxRetries;
  for (let round = 0; ; round++) {
    const result = await options.infer(messages, retries);
    const verdicts = result.toolCalls.map((call) =>
      options.alwaysAllowed.includes(call.tool)
        ? ({ allowed: true } as const)
        : checkPermission(call, options.policy, places),
    );
    const denied = result.toolCalls.flatMap((call, index) => {
      const verdict = verdicts[index];
      return verdict && !verdict.allowed ? [{ tool: call.tool, reason: verdict.reason }] : [];
    });
    if (denied.length === 0) return { kind: "allowed", result };
    const added = deniedBatchMessages(result.toolCalls, verdicts, round);
    options.onDenied?.(denied, added);
    denials.push(...denied);
    retries -= result.iterations;
    if (retries < 0) return { kind: "refused", message: permissionRefusal(denials) };
    messages = [...result.messages, ...added];
  }
}

/** Where the policy's paths resolve: its workspace (default: the working directory) and home. */
export function placesOf(policy: PermissionPolicy): PermissionPlaces {
  return { workspace: policy.workspace ?? process.cwd(), home: homedir() };
}

/** A denied batch as the model sees it on the retry: its calls, then one reply per call. */
function deniedBatchMessages(
  calls: readonly ToolCall[],
  verdicts: readonly ({ allowed: true } | { allowed: false; reason: string })[],
  round: number,
): Message[] {
  const infos = calls.map((call, index) => ({
    name: call.tool,
    args: call.args,
    callId: `denied_${round}_${index}`,
  }));
  const deniedNames = calls
    .filter((_, index) => verdicts[index]?.allowed === false)
    .map((call) => `'${call.tool}'`);
  const replies = calls.map((call, index) => {
    const verdict = verdicts[index];
    return verdict && !verdict.allowed
      ? deniedCallNudge(call.tool, verdict.reason)
      : `[Denied] ${notRunNudge(call.tool, `${deniedNames.join(", ")} was denied by the permission policy`)}`;
  });
  return [
    createMessage(MessageRole.ASSISTANT, "", { type: MessageType.TOOL_CALL }, { toolCalls: infos }),
    ...calls.map((call, index) =>
      createMessage(
        MessageRole.TOOL,
        replies[index] ?? "",
        { type: MessageType.TOOL_RESULT },
        {
          toolName: call.tool,
          toolCallId: infos[index]?.callId,
        },
      ),
    ),
  ];
}

/**
 * `inferPermitted` when there is a policy, else the one inference; denied calls are counted in
 * `stats` (`deniedCalls`, and their replies as nudges) and shown to its observer.
 */
export function inferWithPolicy(
  policy: PermissionPolicy | undefined,
  options: Omit<InferPermittedOptions, "policy" | "onDenied"> & { stats: RequestStats },
): Promise<PermittedResult> {
  if (policy === undefined) {
    return options
      .infer(options.messages, options.maxRetries)
      .then((result) => ({ kind: "allowed", result }));
  }
  const { stats } = options;
  return inferPermitted({
    ...options,
    policy,
    onDenied(denied, added) {
      stats.deniedCalls += denied.length;
      stats.nudges += added.length - 1;
      for (const message of added) stats.observer?.onMessage(message);
    },
  });
}

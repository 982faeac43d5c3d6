/**
 * Turns a finished workflow actor's output back into the typed error the caller expects.
 */

import {
  BackendError,
  ForgeError,
  MaxIterationsError,
  PrerequisiteError,
  StepEnforcementError,
  ToolCallError,
  ToolExecutionError,
  WorkflowCancelledError,
} from "../core/errors.ts";
import type { WorkflowOutput } from "../machines/workflow.machine.ts";

/** The typed error for a failed or cancelled run, with the run's history attached. */
export function errorFromOutput(
  output: WorkflowOutput,
  originalActorError?: unknown,
  toolErrors?: ReadonlyMap<string, unknown>,
): Error {
  if (output.status === "cancelled") {
    return new WorkflowCancelledError(output.messages, output.completedSteps, output.iteration);
  }
  const failure = output.failure;
  let error: Error;
  switch (failure?.kind) {
    case "max_iterations":
      error = new MaxIterationsError(failure.iterations, failure.completedSteps, failure.pendingSteps);
      break;
    case "retries_exhausted":
      error = new ToolCallError(
        `Retries exhausted: ${failure.attempts} consecutive responses without a valid tool call`,
        failure.rawResponse,
      );
      break;
    case "step_enforcement":
      error = new StepEnforcementError(failure.terminalTool, failure.attempts, failure.pendingSteps);
      break;
    case "prerequisite":
      error = new PrerequisiteError(failure.toolName, failure.violations, failure.missingPrereqs);
      break;
    case "tool_execution": {
      // The error the tool threw when this process saw it; else (a resumed run, an argument
      // error) one rebuilt from its name and message.
      const thrown = failure.callId === undefined ? undefined : toolErrors?.get(failure.callId);
      error = new ToolExecutionError(failure.toolName, thrown ?? reviveToolError(failure));
      break;
    }
    case "actor_error":
      error = originalActorError instanceof Error ? originalActorError : reviveActorError(failure);
      break;
    default:
      error = new ForgeError(`Workflow ended in state '${output.status}' without a result`);
  }
  if (error instanceof ForgeError && error.messages === undefined) error.messages = output.messages;
  return error;
}

function reviveToolError(failure: Extract<WorkflowOutput["failure"], { kind: "tool_execution" }>): Error {
  const cause = new Error(failure.errorMessage);
  cause.name = failure.errorName;
  return cause;
}

function reviveActorError(failure: Extract<WorkflowOutput["failure"], { kind: "actor_error" }>): Error {
  const { statusCode, body } = failure.details;
  if (typeof statusCode === "number") {
    const revived = new BackendError(statusCode, typeof body === "string" ? body : "", failure.message);
    return revived;
  }
  const revived = new ForgeError(failure.message);
  revived.name = failure.name;
  return revived;
}

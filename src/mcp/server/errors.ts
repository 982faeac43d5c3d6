/** The errors of serving workflows over MCP: a server that would be reachable without a key, a workflow no MCP tool can be named after. */
import { ForgeError } from "../../core/errors.ts";

/**
 * `serveMcp` over HTTP was asked to listen off the loopback interface without a bearer key:
 * anyone who reaches the port could run the workflows (and their tools' effects).
 */
export class McpServeKeyRequiredError extends ForgeError {
  /** The host it was asked to listen on. */
  readonly host: string;
  constructor(host: string) {
    super(
      `Refusing to serve workflows over MCP on ${host} without a bearer key: off the loopback interface anyone who reaches the port could run them. Pass key (forge mcp serve --key <secret>, or FORGE_MCP_KEY), or listen on 127.0.0.1`,
    );
    this.host = host;
  }
}

/** A workflow's name is not a valid MCP tool name (1–128 of `A-Z a-z 0-9 _ - .`), or two workflows share one. */
export class McpWorkflowToolNameError extends ForgeError {
  /** The workflow's name. */
  readonly workflow: string;
  constructor(workflow: string, problem: string) {
    super(`Workflow '${workflow}' cannot be served as an MCP tool: ${problem}`);
    this.workflow = workflow;
  }
}

/**
 * A served workflow's run parked for a person's approval (ADR 017) and the MCP client could not be
 * asked: it declared no elicitation capability, or the person dismissed the request. The run's
 * pending calls ride along; nothing of the batch ran.
 */
export class McpApprovalRequiredError extends ForgeError {
  /** The parked run's id. */
  readonly runId: string;
  /** The calls that wait for a decision. */
  readonly pending: readonly { callId: string; tool: string; args: Record<string, unknown> }[];
  constructor(
    runId: string,
    pending: readonly { callId: string; tool: string; args: Record<string, unknown> }[],
    why: string,
  ) {
    const calls = pending.map((call) => `${call.tool} ${JSON.stringify(call.args)} (call ${call.callId})`);
    super(
      `Run ${runId} waits for a person to approve ${calls.join(", ")}, and ${why}. Nothing of that batch ran. ` +
        "Run the workflow on a run queue instead (forge worker --registry …, then forge enqueue), where a person decides with `forge runs approve <run-id> --call <call-id>` or `forge runs deny`; or call it from an MCP client that supports elicitation.",
    );
    this.runId = runId;
    this.pending = pending;
  }
}

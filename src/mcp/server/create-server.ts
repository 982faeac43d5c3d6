/**
 * The MCP server of a set of workflows (the SDK's low-level `Server`): `tools/list` gives each
 * workflow as a tool, `tools/call` runs it (`call-workflow.ts`). One server per connection: over
 * HTTP each session gets its own.
 */
import { randomUUID } from "node:crypto";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { PendingApproval } from "../../core/approval.ts";
import type { RunObserver } from "../../core/run-observer.ts";
import type { Workflow } from "../../core/workflow.ts";
import type { WorkflowRunner } from "../../loop/runner.ts";
import { type ApprovalAnswer, callWorkflow } from "./call-workflow.ts";
import type { McpServerSdk } from "./sdk.ts";
import { errorResult, workflowArgsSchema, workflowTools } from "./workflow-tool.ts";

/** What one served call was, for logs. */
export interface McpWorkflowCallEvent {
  tool: string;
  runId: string;
  outcome: "completed" | "failed";
  /** The failed call's text (the typed error's name and message). */
  error?: string;
  durationMs: number;
}

/** What the workflow server serves and how. */
export interface WorkflowMcpServerOptions {
  /** The workflows to offer, one tool each, named by the workflow's `name`. */
  workflows: readonly Workflow[];
  /** The runner that runs them (its client, guardrails and context manager). */
  runner: WorkflowRunner;
  /** The server's name in `initialize` (default "forge"). */
  name?: string;
  /** The server's version in `initialize` (default "0.0.0"). */
  version?: string;
  /** How long to wait for a person's answer to an approval request (default 10 minutes). */
  approvalTimeoutMs?: number;
  /** Observers of every run a call starts (after the progress reporter). */
  observers?: readonly RunObserver[];
  /** Hears each call end, for logs. */
  onCallEnd?: (event: McpWorkflowCallEvent) => void;
}

/** The default wait for a person's answer to an approval request. */
const APPROVAL_TIMEOUT_MS = 10 * 60_000;

/**
 * A new MCP server for `options.workflows`, not connected yet: `server.connect(transport)`.
 *
 * @throws {McpWorkflowToolNameError} for a workflow name MCP does not accept, or two of one name.
 */
export function createWorkflowMcpServer(options: WorkflowMcpServerOptions, sdk: McpServerSdk): Server {
  const tools = workflowTools(options.workflows);
  const workflows = new Map(options.workflows.map((workflow) => [workflow.name, workflow]));
  const { types } = sdk;
  const server = new sdk.Server(
    { name: options.name ?? "forge", version: options.version ?? "0.0.0" },
    {
      capabilities: { tools: { listChanged: false } },
      instructions:
        "Each tool runs a forge-guardrails workflow to its end: give it the task as `message`. A step that needs a person's approval is asked through elicitation.",
    },
  );

  server.setRequestHandler(types.ListToolsRequestSchema, async () => ({ tools: [...tools.values()] }));

  server.setRequestHandler(types.CallToolRequestSchema, async (request, extra) => {
    const workflow = workflows.get(request.params.name);
    if (!workflow) {
      throw new types.McpError(
        types.ErrorCode.InvalidParams,
        `No tool '${request.params.name}'; the tools are ${[...workflows.keys()].join(", ")}`,
      );
    }
    const parsed = workflowArgsSchema(workflow).safeParse(request.params.arguments ?? {});
    // Wrong arguments are a tool error the calling model can read and fix.
    if (!parsed.success)
      return errorResult(new TypeError(`Invalid arguments for '${workflow.name}': ${parsed.error.message}`));
    const progressToken = request.params._meta?.progressToken;
    const runId = `mcp-${randomUUID()}`;
    const started = performance.now();
    const result = await callWorkflow({
      workflow,
      args: parsed.data,
      runner: options.runner,
      runId,
      signal: extra.signal,
      ...(options.observers && { observers: options.observers }),
      ...(progressToken !== undefined && {
        progress: (progress, message) =>
          extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken, progress, message },
          }),
      }),
      ...(server.getClientCapabilities()?.elicitation && {
        askApproval: (call) =>
          askApproval(call, extra, sdk, options.approvalTimeoutMs ?? APPROVAL_TIMEOUT_MS),
      }),
    });
    options.onCallEnd?.({
      tool: workflow.name,
      runId,
      outcome: result.isError ? "failed" : "completed",
      ...(result.isError && { error: result.content[0]?.text ?? "" }),
      durationMs: performance.now() - started,
    });
    return result;
  });
  return server;
}

type RequestExtra = Parameters<Parameters<Server["setRequestHandler"]>[1]>[1];

/** One elicitation form per pending call: approve (yes/no) and a reason the model reads when denied. */
async function askApproval(
  call: PendingApproval,
  extra: RequestExtra,
  sdk: McpServerSdk,
  timeoutMs: number,
): Promise<ApprovalAnswer> {
  const answer = await extra.sendRequest(
    {
      method: "elicitation/create",
      params: {
        mode: "form",
        message: `Run ${call.runId} wants to call ${call.tool} with ${JSON.stringify(call.args)}. Approve it?`,
        requestedSchema: {
          type: "object",
          properties: {
            approved: { type: "boolean", title: "Approve", description: `Run ${call.tool} as asked` },
            reason: { type: "string", title: "Reason", description: "Why (the model reads it when denied)" },
          },
          required: ["approved"],
        },
      },
    },
    sdk.types.ElicitResultSchema,
    { timeout: timeoutMs, signal: extra.signal },
  );
  if (answer.action === "cancel") return "dismissed";
  const reason =
    typeof answer.content?.reason === "string" && answer.content.reason !== ""
      ? answer.content.reason
      : undefined;
  if (answer.action === "decline") {
    return { callId: call.callId, approved: false, reason: reason ?? "The person declined this call." };
  }
  return { callId: call.callId, approved: answer.content?.approved === true, ...(reason && { reason }) };
}

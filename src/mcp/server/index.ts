/** Forge workflows served as MCP tools, over stdio or Streamable HTTP (the SDK's server side). */
export { type ApprovalAnswer, callWorkflow, type WorkflowCall } from "./call-workflow.ts";
export {
  createWorkflowMcpServer,
  type McpWorkflowCallEvent,
  type WorkflowMcpServerOptions,
} from "./create-server.ts";
export { McpApprovalRequiredError, McpServeKeyRequiredError, McpWorkflowToolNameError } from "./errors.ts";
export { isLoopbackHost, type McpHttpListener, type McpHttpListenOptions } from "./http.ts";
export { loadMcpServerSdk, type McpServerSdk } from "./sdk.ts";
export { type ServedMcp, type ServeMcpOptions, serveMcp } from "./serve-mcp.ts";
export {
  type WorkflowToolArgs,
  type WorkflowToolInfo,
  type WorkflowToolResult,
  workflowArgsSchema,
  workflowTools,
} from "./workflow-tool.ts";

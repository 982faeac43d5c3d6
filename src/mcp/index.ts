/** MCP servers' tools in forge workflows: connect over stdio or Streamable HTTP, list, call, close. */
export {
  connectMcpServer,
  type McpCallOptions,
  type McpServerConnection,
  type McpToolInfo,
} from "./connection.ts";
export { effectsFromAnnotations, type McpToolAnnotations } from "./effects.ts";
export {
  MCP_SDK_INSTALL,
  McpSdkMissingError,
  McpToolError,
  McpToolNameCollisionError,
  McpToolRemovedError,
} from "./errors.ts";
export type {
  McpHttpServerOptions,
  McpServerBaseOptions,
  McpServerOptions,
  McpStdioServerOptions,
} from "./options.ts";
export {
  McpApprovalRequiredError,
  McpServeKeyRequiredError,
  type McpWorkflowCallEvent,
  McpWorkflowToolNameError,
  type ServedMcp,
  type ServeMcpOptions,
  serveMcp,
  type WorkflowMcpServerOptions,
} from "./server/index.ts";
export { type McpToolDefsOptions, mcpToolDefs } from "./tool-defs.ts";

/** Ready-made tools. */
export { RESPOND_TOOL_NAME, respondTool } from "./respond.ts";

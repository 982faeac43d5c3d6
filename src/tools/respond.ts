/**
 * The synthetic `respond` tool: lets a model answer in prose while staying in tool-calling grammar.
 */
import { z } from "zod";
import { defineTool, type ToolDef } from "../core/tools.ts";

/** Name of the synthetic respond tool. */
export const RESPOND_TOOL_NAME = "respond";

/**
 * A `ToolDef` named `respond` with one string parameter `message`; it returns the message.
 * Make it a terminal tool so a conversational answer ends the run.
 */
export function respondTool(): ToolDef {
  return defineTool({
    name: RESPOND_TOOL_NAME,
    description:
      "Reply to the user in plain language. Call this when no other tool fits or when you have the final answer.",
    parameters: z.object({ message: z.string().describe("The reply to show the user") }),
    execute: ({ message }) => message,
  });
}

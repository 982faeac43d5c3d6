/**
 * A workflow with distractors for the per-step tool subsets and escalation tests: two required
 * lookups (the second needs the first), three tools that serve nothing, and a terminal notify.
 */
import { z } from "zod";
import { defineTool } from "../../src/core/tools.ts";
import type { LLMResponse } from "../../src/core/types.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { toolCall } from "../../src/testing/index.ts";

/** The flight workflow and the calls its tools ran, in order. */
export function flightWorkflow() {
  const executed: string[] = [];
  const tool = (name: string, prerequisites: string[] = []) =>
    defineTool({
      name,
      description: `The ${name.replaceAll("_", " ")} tool`,
      parameters: z.object({ flight: z.string() }),
      prerequisites,
      execute: ({ flight }) => {
        executed.push(`${name}:${flight}`);
        return { tool: name, flight };
      },
    });
  const workflow = defineWorkflow({
    name: "flight_update",
    description: "Tell a passenger about their flight",
    tools: [
      tool("search_flights"),
      tool("get_flight_status"),
      tool("book_hotel"),
      tool("get_gate_info", ["get_flight_status"]),
      tool("cancel_booking"),
      tool("notify_passenger"),
    ],
    requiredSteps: ["get_flight_status", "get_gate_info"],
    terminalTool: "notify_passenger",
    systemPrompt: "You update passengers.",
  });
  return { workflow, executed };
}

/** The names of the tools a ScriptedClient's recorded call was offered. */
export function offeredNames(call: { tools: { name: string }[] }): string[] {
  return call.tools.map((tool) => tool.name);
}

/**
 * Scripts for an escalation: the base client answers `failure` twice, the stronger client makes the
 * first required call, then the base client finishes (the second lookup, then notify).
 */
export function escalationScripts(failure: LLMResponse): { base: LLMResponse[]; strong: LLMResponse[] } {
  return {
    base: [
      failure,
      failure,
      toolCall("get_gate_info", { flight: "TP1" }),
      toolCall("notify_passenger", { flight: "TP1" }),
    ],
    strong: [toolCall("get_flight_status", { flight: "TP1" })],
  };
}

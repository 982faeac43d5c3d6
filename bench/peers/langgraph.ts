/**
 * LangGraph.js under the peers benchmark: the prebuilt `createReactAgent` with two LangChain tools
 * (the terminal one `returnDirect`, so the graph ends on its result) and a minimal fake chat model
 * built on `@langchain/core`'s `BaseChatModel` that answers each step with one tool call.
 * LangSmith tracing off (the LANGCHAIN_/LANGSMITH_TRACING variables cleared, no callbacks).
 */
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { tool } from "@langchain/core/tools";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { z } from "zod";
import { assertSteps, noopArgs, type PeerAdapter, timeLoop } from "./peer.ts";

for (const name of [
  "LANGCHAIN_TRACING_V2",
  "LANGCHAIN_TRACING",
  "LANGSMITH_TRACING",
  "LANGSMITH_TRACING_V2",
]) {
  delete process.env[name];
}

/** A chat model that answers step `n` with one call (`finish` on the last step). */
class ScriptedChatModel extends BaseChatModel {
  calls = 0;
  constructor(private readonly steps: number) {
    super({});
  }
  override _llmType(): string {
    return "scripted";
  }
  override bindTools(): this {
    return this;
  }
  override async _generate(
    _messages: BaseMessage[],
    _options: this["ParsedCallOptions"],
    _runManager?: CallbackManagerForLLMRun,
  ): Promise<ChatResult> {
    const step = this.calls++;
    const last = step === this.steps - 1;
    const message = new AIMessage({
      content: "",
      tool_calls: [{ id: `call_${step}`, name: last ? "finish" : "noop", args: last ? {} : noopArgs(step) }],
    });
    return { generations: [{ text: "", message }] };
  }
}

const tools = [
  tool(async () => "ok", { name: "noop", description: "does nothing", schema: z.object({ i: z.number() }) }),
  tool(async () => "done", { name: "finish", description: "ends", schema: z.object({}), returnDirect: true }),
];

/** `createReactAgent` adapter. */
export function langGraphPeer(version: string): PeerAdapter {
  return {
    name: "LangGraph.js (createReactAgent)",
    version,
    async run(steps) {
      const llm = new ScriptedChatModel(steps);
      const agent = createReactAgent({ llm, tools, prompt: "s" });
      // Each step is two super-steps (agent, tools); the default limit of 25 would stop a long run.
      const elapsed = await timeLoop(() =>
        agent.invoke({ messages: [{ role: "user", content: "go" }] }, { recursionLimit: 2 * steps + 5 }),
      );
      assertSteps(this.name, steps, llm.calls);
      return elapsed;
    },
  };
}

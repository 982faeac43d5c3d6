/**
 * forge-tiny's training data must not contain the eval scenarios' tool names or user messages,
 * so eval scores measure generalisation rather than memorisation.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { generateConversations, HELDOUT_SEED, TRAIN_SEED } from "../../tools/tiny-model/generate.ts";

const scenariosModule = fileURLToPath(new URL("../../eval/scenarios/index.ts", import.meta.url));
const present = existsSync(scenariosModule);
if (!present) {
  console.warn(
    `forge-tiny disjointness check skipped: ${scenariosModule} does not exist yet (eval scenarios not written).`,
  );
}

/** The size `npm run train:tiny` generates by default. */
const TRAIN_CONVERSATIONS = 6000;

describe.skipIf(!present)("forge-tiny training data vs eval scenarios", () => {
  it("shares no tool name and no user message with any eval scenario", async () => {
    const { ALL_SCENARIOS } = (await import(
      scenariosModule
    )) as typeof import("../../eval/scenarios/index.ts");
    expect(ALL_SCENARIOS.length).toBeGreaterThan(0);
    const evalTools = new Set<string>();
    const evalMessages: string[] = [];
    for (const scenario of ALL_SCENARIOS) {
      for (const name of Object.keys(scenario.build().workflow.tools)) evalTools.add(name);
      for (const step of scenario.reference) evalTools.add(step.tool);
      evalMessages.push(scenario.userMessage.trim().toLowerCase());
    }
    const conversations = [
      ...generateConversations(TRAIN_CONVERSATIONS, TRAIN_SEED),
      ...generateConversations(100, HELDOUT_SEED),
    ];
    const sharedTools = new Set<string>();
    const sharedMessages = new Set<string>();
    for (const conversation of conversations) {
      for (const name of conversation.toolNames) if (evalTools.has(name)) sharedTools.add(name);
      const texts = conversation.messages.map((message) => String(message.content).toLowerCase());
      for (const message of evalMessages) {
        if (texts.some((text) => text.includes(message))) sharedMessages.add(message);
      }
    }
    expect([...sharedTools], "eval tool names in the training data").toEqual([]);
    expect([...sharedMessages], "eval user messages in the training data").toEqual([]);
  }, 120_000);
});

/**
 * The sim-model as an in-process `LLMClient`: the same turn planner without HTTP, for tests and
 * for measuring the harness's own overhead.
 */
import type { ToolSpec } from "../../src/core/tools.ts";
import { ChunkType, type LLMClient, type LLMResponse, type StreamChunk } from "../../src/core/types.ts";
import type { EvalScenario } from "../scenarios/scenario.ts";
import type { FaultProfile } from "./profiles.ts";
import { planTurn, type SimTurn } from "./turn.ts";
import type { WireMessage } from "./wire.ts";

/** The LLM response a planned turn stands for (what a client parses from the wire reply). */
export function turnToResponse(turn: SimTurn): LLMResponse {
  if (turn.kind !== "calls") return { content: turn.content };
  return turn.calls.map((call, index) => ({
    tool: call.name,
    args: call.arguments,
    ...(index === 0 && turn.content ? { reasoning: turn.content } : {}),
  }));
}

/** An in-process sim-model for one scenario, profile and seed. */
export class InProcessSimClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  /** The turns played, in order. */
  readonly turns: SimTurn[] = [];
  readonly #scenario: EvalScenario;
  readonly #profile: FaultProfile;
  readonly #seed: number;

  constructor(scenario: EvalScenario, profile: FaultProfile, seed = 0) {
    this.#scenario = scenario;
    this.#profile = profile;
    this.#seed = seed;
  }

  async send(messages: Record<string, unknown>[], tools: ToolSpec[] = []): Promise<LLMResponse> {
    const turn = planTurn({
      scenarioId: this.#scenario.id,
      reference: this.#scenario.reference,
      profile: this.#profile,
      seed: this.#seed,
      messages: messages as WireMessage[],
      toolNames: tools.map((tool) => tool.name),
    });
    this.turns.push(turn);
    return turnToResponse(turn);
  }

  async *sendStream(messages: Record<string, unknown>[], tools?: ToolSpec[]): AsyncIterable<StreamChunk> {
    const response = await this.send(messages, tools);
    yield { type: ChunkType.FINAL, response };
  }

  async getContextLength(): Promise<number | null> {
    return this.#scenario.budgetTokens;
  }
}

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALL_SCENARIOS } from "../../eval/scenarios/index.ts";
import { isSuccessfulResult, locateInReference } from "../../eval/sim-model/position.ts";
import {
  FAULT_KINDS,
  FAULT_PROFILES,
  FaultKind,
  faultForDraw,
  profileByName,
  RESCUABLE_FAULTS,
  totalFaultRate,
} from "../../eval/sim-model/profiles.ts";
import { drawUniform } from "../../eval/sim-model/random.ts";
import { type SimModelServer, startSimModel } from "../../eval/sim-model/server.ts";
import {
  guessArguments,
  hallucinate,
  planTurn,
  renderAsText,
  withWrongType,
} from "../../eval/sim-model/turn.ts";
import { parseSimModel, simModelName, type WireMessage } from "../../eval/sim-model/wire.ts";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { resolveToolName } from "../../src/core/tool-names.ts";
import { ChunkType } from "../../src/core/types.ts";
import { rescueToolCall } from "../../src/prompts/index.ts";
import { runInProcess, scenario, scripted } from "./helpers.ts";

const user = (content: string): WireMessage => ({ role: "user", content });
const call = (id: string, name: string, args: unknown): WireMessage => ({
  role: "assistant",
  content: "",
  tool_calls: [{ id, type: "function", function: { name, arguments: JSON.stringify(args) } }],
});
const result = (id: string, content: string): WireMessage => ({ role: "tool", tool_call_id: id, content });

describe("fault formats against rescue", () => {
  const steps = ALL_SCENARIOS.flatMap((entry) =>
    entry.reference.map((step) => ({ entry, step, tools: Object.keys(entry.build().workflow.tools) })),
  );

  it.each([
    FaultKind.FENCED_JSON,
    FaultKind.QWEN_TOOL_CALL,
    FaultKind.MISTRAL_TOOL_CALLS,
    FaultKind.PYTHONIC_CALL,
  ])("%s: rescue recovers exactly the intended call, for every reference step", (fault) => {
    for (const { step, tools } of steps) {
      const text = renderAsText(fault, { name: step.tool, arguments: step.args }, 0);
      expect(rescueToolCall(text, tools), text).toEqual([{ tool: step.tool, args: step.args }]);
    }
    expect(RESCUABLE_FAULTS.has(fault)).toBe(true);
  });

  it.each([FaultKind.PROSE, FaultKind.MALFORMED_JSON])(
    "%s: rescue must not produce a call (both variants)",
    (fault) => {
      for (const { step, tools } of steps) {
        for (const variant of [0, 1]) {
          const text = renderAsText(fault, { name: step.tool, arguments: step.args }, variant);
          expect(rescueToolCall(text, tools), text).toBeNull();
        }
      }
      expect(RESCUABLE_FAULTS.has(fault)).toBe(false);
    },
  );

  it("hallucinated names are plausible, never a real tool nor a near miss; wrong types change exactly one argument's type", () => {
    expect(hallucinate("get_weather", [])).toBe("get_weather_v2");
    expect(resolveToolName(hallucinate("get_weather", []), ["get_weather"])).toBeNull();
    expect(hallucinate("decline", ["decline_v2"])).toBe("decline_v2_v2");
    expect(withWrongType({ amount: 250, to: "x" })).toEqual({ amount: "250", to: "x" });
    expect(withWrongType({ city: "Lisbon" })).toEqual({ city: ["Lisbon"] });
    expect(withWrongType({})).toBeNull();
    expect(guessArguments({ id: "E-1", n: 3, list: [1], ok: true })).toEqual({
      id: "unknown",
      n: 0,
      list: [],
      ok: false,
    });
  });
});

describe("profiles", () => {
  it("every profile's rates are probabilities that sum to at most 1; unknown names list the valid ones", () => {
    for (const profile of Object.values(FAULT_PROFILES)) {
      for (const kind of Object.keys(profile.rates)) expect(FAULT_KINDS).toContain(kind);
      expect(totalFaultRate(profile)).toBeLessThanOrEqual(1);
    }
    expect(totalFaultRate(FAULT_PROFILES.clean!)).toBe(0);
    expect(() => profileByName("chaos")).toThrow(/Valid profiles: clean, mixed, formats, process, hostile/);
  });

  it("the seeded draws reproduce each profile's rates", () => {
    const profile = FAULT_PROFILES.mixed!;
    const counts = new Map<string, number>();
    const draws = 40_000;
    for (let index = 0; index < draws; index += 1) {
      const fault = faultForDraw(profile, drawUniform(7, "scenario", index, 12345)) ?? "none";
      counts.set(fault, (counts.get(fault) ?? 0) + 1);
    }
    for (const [kind, rate] of Object.entries(profile.rates)) {
      expect(Math.abs((counts.get(kind) ?? 0) / draws - (rate ?? 0)), kind).toBeLessThan(0.006);
    }
    expect((counts.get("none") ?? 0) / draws).toBeCloseTo(1 - totalFaultRate(profile), 1);
  });
});

describe("the position in the reference, from the history alone", () => {
  const reference = scenario("sequential_reasoning").reference;
  const start = [{ role: "system", content: "s" }, user("go")] as WireMessage[];

  it("advances on successful reference calls only; an error result does not count", () => {
    expect(locateInReference(start, reference).next).toBe(0);
    const failed = [
      ...start,
      call("a", "find_employee", { name: "Priya Raman" }),
      result("a", "[ToolError] Boom: x"),
    ];
    expect(locateInReference(failed, reference).next).toBe(0);
    const done = [
      ...start,
      call("a", "find_employee", { name: "Priya Raman" }),
      result("a", '{"employee_id":"E-2231"}'),
    ];
    const position = locateInReference(done, reference);
    expect(position.next).toBe(1);
    expect([...position.visible]).toEqual([0]);
    expect(position.turn).toBe(1);
  });

  it("after a skipped step, a step correction sends the sim back to the first missing step", () => {
    const history = [
      ...start,
      call("a", "find_employee", { name: "Priya Raman" }),
      result("a", "{}"),
      call("b", "get_department", { department_id: "D-40" }),
      result("b", "{}"),
      call("c", "file_expense_approval", {}),
      result("c", "[StepEnforcementError] You cannot call file_expense_approval yet."),
    ];
    const position = locateInReference(history, reference);
    expect(position.next).toBe(3);
    expect(position.firstMissing).toBe(1);
    expect(position.corrected).toBe(true);
    const turn = planTurn({
      scenarioId: "sequential_reasoning",
      reference,
      profile: FAULT_PROFILES.clean!,
      seed: 1,
      messages: history,
    });
    expect(turn).toMatchObject({ kind: "calls", step: 1, calls: [{ name: "get_employee" }] });
  });

  it("a result dropped by compaction counts as done but its data is gone: dependent arguments are guessed", () => {
    const history = [
      ...start,
      call("a", "find_employee", { name: "Priya Raman" }),
      result("a", "[Result dropped by compaction]"),
    ];
    expect(isSuccessfulResult("[Result dropped by compaction]")).toBe(true);
    const turn = planTurn({
      scenarioId: "x",
      reference,
      profile: FAULT_PROFILES.clean!,
      seed: 1,
      messages: history,
    });
    expect(turn).toMatchObject({
      kind: "calls",
      step: 1,
      calls: [{ name: "get_employee", arguments: { employee_id: "unknown" } }],
    });
  });

  it("a sliding window's step summary stands for the calls it dropped", () => {
    const history = [
      ...start,
      user("[Steps completed: find_employee, get_employee]"),
      call("c", "get_department", { department_id: "D-40" }),
      result("c", "{}"),
    ];
    expect(locateInReference(history, reference).next).toBe(3);
  });

  it("is deterministic and stateless: the same request gives the same reply", () => {
    const profile = FAULT_PROFILES.hostile!;
    const replies = Array.from({ length: 3 }, () =>
      planTurn({ scenarioId: "sequential_reasoning", reference, profile, seed: 42, messages: start }),
    );
    expect(replies[1]).toEqual(replies[0]);
    expect(replies[2]).toEqual(replies[0]);
  });
});

describe("each fault against the guardrail that handles it (in-process sim)", () => {
  it("Qwen <tool_call> text: rescued by reforged; without rescue it costs a retry nudge; bare fails", async () => {
    const reforged = await runInProcess("basic_2step", "reforged", scripted(FaultKind.QWEN_TOOL_CALL));
    expect(reforged.measurement).toMatchObject({
      accurate: true,
      rescues: 1,
      iterations: 2,
      forcedRetries: 0,
    });
    const noRescue = await runInProcess("basic_2step", "no_rescue", scripted(FaultKind.QWEN_TOOL_CALL));
    expect(noRescue.measurement).toMatchObject({
      accurate: true,
      rescues: 0,
      iterations: 3,
      nudges: { retry: 1 },
    });
    const bare = await runInProcess("basic_2step", "bare", scripted(FaultKind.QWEN_TOOL_CALL));
    expect(bare.measurement).toMatchObject({
      accurate: false,
      status: "failed",
      failureKind: "retries_exhausted",
    });
  });

  it("malformed JSON is never rescued: a retry nudge recovers it", async () => {
    const { measurement } = await runInProcess("basic_2step", "reforged", scripted(FaultKind.MALFORMED_JSON));
    expect(measurement).toMatchObject({
      accurate: true,
      rescues: 0,
      iterations: 3,
      nudges: { retry: 1 },
      // The retry after the prose-like text asked for a required call.
      forcedRetries: 1,
    });
  });

  it("a premature terminal call: blocked and recovered with steps on; with steps off it answers with guesses", async () => {
    const reforged = await runInProcess(
      "sequential_3step",
      "reforged",
      scripted(FaultKind.PREMATURE_TERMINAL),
    );
    expect(reforged.measurement).toMatchObject({ accurate: true, nudges: { step: 1 }, iterations: 4 });
    const noSteps = await runInProcess(
      "sequential_3step",
      "no_steps",
      scripted(FaultKind.PREMATURE_TERMINAL),
    );
    expect(noSteps.measurement).toMatchObject({ completed: true, accurate: false, iterations: 1 });
    expect(noSteps.measurement.answerProblem).toMatch(/send_statement\.account_id/);
  });

  it("a hallucinated tool name: an unknown-tool nudge recovers it; without nudges the run fails", async () => {
    const reforged = await runInProcess("tool_selection", "reforged", scripted(FaultKind.HALLUCINATED_TOOL));
    expect(reforged.measurement).toMatchObject({ accurate: true, nudges: { unknown_tool: 1 } });
    const noNudge = await runInProcess("tool_selection", "no_nudge", scripted(FaultKind.HALLUCINATED_TOOL));
    expect(noNudge.measurement).toMatchObject({ accurate: false, failureKind: "retries_exhausted" });
  });

  it("a wrong argument type: the tool error is recovered; with no recovery the run fails", async () => {
    const reforged = await runInProcess("argument_fidelity", "reforged", scripted(FaultKind.WRONG_ARG_TYPES));
    expect(reforged.measurement).toMatchObject({ accurate: true, toolErrors: 1, iterations: 4 });
    const noRecovery = await runInProcess(
      "argument_fidelity",
      "no_recovery",
      scripted(FaultKind.WRONG_ARG_TYPES),
    );
    expect(noRecovery.measurement).toMatchObject({ accurate: false, failureKind: "tool_execution" });
  });

  it("a skipped step cascades into the final state when nothing enforces the steps", async () => {
    const reforged = await runInProcess(
      "tool_selection_stateful",
      "reforged",
      scripted(FaultKind.SKIPPED_STEP),
    );
    expect(reforged.measurement).toMatchObject({ accurate: true, nudges: { step: 1 } });
    const noSteps = await runInProcess(
      "tool_selection_stateful",
      "no_steps",
      scripted(FaultKind.SKIPPED_STEP),
    );
    expect(noSteps.measurement).toMatchObject({ completed: true, accurate: false });
    expect(noSteps.measurement.stateProblem).toMatch(/"front":"unlocked"/);
  });
});

describe("the sim-model HTTP server", () => {
  let sim: SimModelServer;
  beforeAll(async () => {
    sim = await startSimModel({ profile: "clean" });
  });
  afterAll(async () => {
    await sim.close();
  });

  const post = (body: unknown) =>
    fetch(`${sim.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("routes by the model field, listens on 127.0.0.1 and lists its profiles", async () => {
    expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(parseSimModel(simModelName("mixed", "basic_2step", 3))).toEqual({
      profile: "mixed",
      scenario: "basic_2step",
      seed: 3,
    });
    const models = (await (await fetch(`${sim.url}/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((model) => model.id)).toContain("sim/hostile");
    const response = await post({
      model: "sim/clean/basic_2step/1",
      messages: [user(scenario("basic_2step").userMessage)],
    });
    expect(response.headers.get("x-sim-fault")).toBe("none");
    const body = (await response.json()) as {
      choices: { message: { tool_calls: { function: { name: string; arguments: string } }[] } }[];
    };
    expect(body.choices[0]?.message.tool_calls[0]?.function).toEqual({
      name: "get_weather",
      arguments: '{"city":"Lisbon"}',
    });
  });

  it("finds the scenario from the system prompt and user message when the model field names none", async () => {
    const entry = scenario("argument_fidelity");
    const system = entry.build().workflow.systemPrompt;
    const response = await post({
      model: "anything",
      messages: [{ role: "system", content: system }, user(entry.userMessage)],
    });
    const body = (await response.json()) as {
      choices: { message: { tool_calls: { function: { name: string } }[] } }[];
    };
    expect(body.choices[0]?.message.tool_calls[0]?.function.name).toBe("find_customer");
  });

  it("answers unknown scenarios and profiles with 404s that list the valid ones", async () => {
    const unknownScenario = await post({ model: "sim/clean/nope/1", messages: [user("x")] });
    expect(unknownScenario.status).toBe(404);
    expect(await unknownScenario.text()).toMatch(/scenarios: basic_2step, sequential_3step/);
    const unknownProfile = await post({ model: "sim/chaos/basic_2step/1", messages: [user("x")] });
    expect(unknownProfile.status).toBe(404);
    expect(await unknownProfile.text()).toMatch(/profiles: clean, mixed/);
    const malformed = await fetch(`${sim.url}/chat/completions`, { method: "POST", body: "{" });
    expect(malformed.status).toBe(400);
  });

  it("rejects a history over the scenario's context budget like a real server", async () => {
    const response = await post({
      model: "sim/clean/phase2_compaction/1",
      messages: [user("x".repeat(5000))],
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { type: "exceed_context_size_error", n_ctx: 1000 },
    });
  });

  it("streams the same reply the OpenAICompatibleClient parses without streaming", async () => {
    const client = new OpenAICompatibleClient({
      baseUrl: sim.url,
      model: "sim/clean/sequential_3step/1",
      mode: "native",
      logger: () => {},
    });
    const messages = [user(scenario("sequential_3step").userMessage)];
    const plain = await client.send(messages, []);
    const chunks = [];
    for await (const chunk of client.sendStream(messages, [])) chunks.push(chunk);
    expect(chunks.at(-1)).toEqual({ type: ChunkType.FINAL, response: plain });
    expect(plain).toEqual([
      { tool: "get_account", args: { account_id: "AC-311" }, reasoning: "First the account details." },
    ]);
  });
});

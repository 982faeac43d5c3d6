import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { appendMessages } from "../../src/core/history.ts";
import { HistorySerializer } from "../../src/core/history-serializer.ts";
import {
  createMessage,
  foldReasoning,
  type Message,
  MessageRole,
  MessageType,
  serializeHistory,
  toApiMessage,
} from "../../src/core/messages.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, weatherWorkflow } from "../helpers/workflows.ts";

let counter = 0;
function message(type: MessageType = MessageType.TOOL_RESULT): Message {
  counter += 1;
  if (type === MessageType.TOOL_CALL) {
    return createMessage(
      MessageRole.ASSISTANT,
      "",
      { type },
      { toolCalls: [{ name: "lookup", args: { n: counter }, callId: `call_${counter}` }] },
    );
  }
  if (type === MessageType.TOOL_RESULT) {
    return createMessage(MessageRole.TOOL, `result ${counter}`, { type }, { toolName: "lookup" });
  }
  const role = type === MessageType.REASONING ? MessageRole.ASSISTANT : MessageRole.USER;
  return createMessage(role, `message ${counter}`, { type });
}

function start(): readonly Message[] {
  return Object.freeze([message(MessageType.SYSTEM_PROMPT), message(MessageType.USER_INPUT)]);
}

const addedTypes = fc.array(
  fc.constantFrom(MessageType.TOOL_RESULT, MessageType.TOOL_CALL, MessageType.REASONING),
  { maxLength: 3 },
);

/** One step of one run: grow its history, compact it, branch off an older one, or edit a copy in place. */
const operation = fc.record({
  run: fc.nat(),
  kind: fc.constantFrom("append", "append", "append", "compact", "branch", "editUnfrozen"),
  added: addedTypes,
  at: fc.nat(),
  cut: fc.nat({ max: 4 }),
});

describe("HistorySerializer", () => {
  it("serializes interleaved runs, compacted, branched and edited histories as a fresh serialization would", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 4 }),
        fc.array(operation, { minLength: 1, maxLength: 40 }),
        fc.constantFrom("openai" as const, "ollama" as const),
        (runCount, operations, format) => {
          const runs = Array.from({ length: runCount }, () => ({
            serializer: new HistorySerializer(format),
            histories: [start()],
          }));
          // The worst case: one serializer that sees every run's histories in turn.
          const sharedByAll = new HistorySerializer(format);
          const check = (serializer: HistorySerializer, history: readonly Message[]) => {
            const fresh = serializeHistory(history, format);
            expect(serializer.serialize(history)).toEqual(fresh);
            expect(sharedByAll.serialize(history)).toEqual(fresh);
          };
          for (const { run: runIndex, kind, added, at, cut } of operations) {
            const run = runs[runIndex % runs.length]!;
            const current = run.histories.at(-1)!;
            const fresh = added.map((type) => message(type));
            let next: readonly Message[];
            if (kind === "append") {
              next = appendMessages(current, fresh);
            } else if (kind === "branch") {
              next = appendMessages(run.histories[at % run.histories.length]!, fresh);
            } else if (kind === "compact") {
              // As the machine stores a compaction: a new frozen array, the head kept, a middle cut.
              const from = Math.min(2, current.length);
              const summary = createMessage(MessageRole.USER, "[summary]", { type: MessageType.SUMMARY });
              next = Object.freeze([
                ...current.slice(0, from),
                summary,
                ...current.slice(Math.min(current.length, from + cut)),
              ]);
            } else {
              // A caller's own array: serialized, then edited in place and serialized again.
              const edited = [...current];
              check(run.serializer, edited);
              edited.push(...fresh);
              if (edited.length > 2) edited[at % edited.length] = message();
              next = edited;
            }
            run.histories.push(next);
            check(run.serializer, next);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("equals toApiMessage over the folded history, reasoning included", () => {
    const serializer = new HistorySerializer("openai");
    let history = start();
    for (const types of [
      [MessageType.REASONING, MessageType.TOOL_CALL, MessageType.TOOL_RESULT],
      [MessageType.REASONING],
      [MessageType.TOOL_CALL, MessageType.TOOL_RESULT],
    ]) {
      history = appendMessages(
        history,
        types.map((type) => message(type)),
      );
      expect(serializer.serialize(history)).toEqual(
        foldReasoning(history).map((item) => toApiMessage(item, "openai")),
      );
    }
  });

  it("keeps a run's wire objects while another run is serialized in between, and hands out copies", () => {
    const first = new HistorySerializer("openai");
    const second = new HistorySerializer("openai");
    let history = start();
    const before = first.serialize(history);
    second.serialize(appendMessages(start(), [message()]));
    history = appendMessages(history, [message(MessageType.TOOL_CALL), message()]);
    const after = first.serialize(history);
    expect(after).toHaveLength(4);
    // The prefix's wire objects are reused, not rebuilt, and they are frozen.
    expect(after.slice(0, 2).every((wire, index) => wire === before[index])).toBe(true);
    expect(Object.isFrozen(after[2])).toBe(true);
    // The list handed out is the caller's: changing it changes nothing for the next call.
    after.pop();
    expect(first.serialize(history)).toHaveLength(4);
  });
});

describe("serializeHistory", () => {
  it("keeps nothing between calls: a message edited in place is serialized as edited", () => {
    const system = message(MessageType.SYSTEM_PROMPT);
    const history = Object.freeze([system, message(MessageType.USER_INPUT)]);
    expect(serializeHistory(history, "openai")[0]).toMatchObject({ content: system.content });
    system.content = "edited";
    expect(serializeHistory(history, "openai")[0]).toMatchObject({ content: "edited" });
  });
});

describe("the inference worker's serializer", () => {
  const script = () => [
    toolCall("get_weather", { city: "Paris" }),
    toolCall("report_weather", { city: "Paris", weather: "sunny" }),
  ];

  it("belongs to one run: a message the caller edits between two runs reaches the model as edited", async () => {
    const { workflow } = weatherWorkflow();
    const client = new ScriptedClient([...script(), ...script()]);
    const runner = new WorkflowRunner({ client, contextManager: createPassthrough() });
    const system = createMessage(MessageRole.SYSTEM, "You are terse.", { type: MessageType.SYSTEM_PROMPT });
    const user = createMessage(MessageRole.USER, "Paris?", { type: MessageType.USER_INPUT });
    await runner.run(workflow, "", { initialMessages: [system, user] });
    system.content = "You are verbose.";
    await runner.run(workflow, "", { initialMessages: [system, user] });
    expect(client.calls.map((call) => call.messages[0]?.content)).toEqual([
      "You are terse.",
      "You are terse.",
      "You are verbose.",
      "You are verbose.",
    ]);
  });

  it("sends each of two interleaved runs exactly what it sends when run alone", async () => {
    const { workflow } = weatherWorkflow();
    const promptVars = { user: "Ada" };
    // Each answer waits a macrotask, so the two runs' LLM calls alternate.
    const delayed = () =>
      script().map(
        (response) => () => new Promise<typeof response>((resolve) => setTimeout(resolve, 1, response)),
      );
    const alone = new ScriptedClient(delayed());
    await new WorkflowRunner({ client: alone, contextManager: createPassthrough() }).run(workflow, "Paris?", {
      runId: "a",
      promptVars,
    });
    // Steps are taken in call order: both runs' first calls, then both second calls.
    const [getWeather, report] = delayed();
    const [getWeatherAgain, reportAgain] = delayed();
    const interleaved = new ScriptedClient([getWeather!, getWeatherAgain!, report!, reportAgain!]);
    const runner = new WorkflowRunner({ client: interleaved, contextManager: createPassthrough() });
    await Promise.all([
      runner.run(workflow, "Paris?", { runId: "a", promptVars }),
      runner.run(workflow, "Lyon?", { runId: "b", promptVars }),
    ]);
    const runA = interleaved.calls.filter((call) => JSON.stringify(call.messages).includes("Paris?"));
    expect(runA.map((call) => call.messages)).toEqual(alone.calls.map((call) => call.messages));
    expect(interleaved.calls.map((call) => JSON.stringify(call.messages).includes("Paris?"))).toEqual([
      true,
      false,
      true,
      false,
    ]);
  });
});

/** Tool-set narrowing (ADR 028): the BM25 ranking and the tools a request keeps. */
import { describe, expect, it } from "vitest";
import { createMessage, MessageType } from "../../src/core/messages.ts";
import { toolSpecFromJsonSchema } from "../../src/core/tools.ts";
import { narrowingQuery, narrowTools, rankTools } from "../../src/guardrails/tool-narrowing.ts";

const spec = (name: string, description: string, properties: string[] = []) =>
  toolSpecFromJsonSchema(name, description, {
    type: "object",
    properties: Object.fromEntries(properties.map((property) => [property, { type: "string" }])),
  });
const tools = [
  spec("get_weather", "Current weather conditions for a city", ["city", "unit"]),
  spec("send_email", "Send an email message to a recipient", ["to", "subject", "body"]),
  spec("readFile", "Read the contents of a file in the workspace", ["path"]),
  spec("search_flights", "Find flights between two airports on a date", ["origin", "destination", "date"]),
  spec("convert_currency", "Convert an amount from one currency to another", ["amount", "from", "to"]),
  spec("Bash", "Run a shell command", ["command"]),
];
const user = (text: string) => createMessage("user", text, { type: MessageType.USER_INPUT });
const called = (name: string, args: Record<string, unknown>) =>
  createMessage(
    "assistant",
    "",
    { type: MessageType.TOOL_CALL },
    { toolCalls: [{ name, args, callId: name }] },
  );

describe("rankTools", () => {
  it("puts the tool whose description matches the question first", () => {
    expect(rankTools(tools, "What's the weather like in Paris today?")[0]).toBe("get_weather");
    expect(rankTools(tools, "Book me flights from SFO to JFK on Friday")[0]).toBe("search_flights");
    expect(rankTools(tools, "How much is 100 USD in euros? Convert it")[0]).toBe("convert_currency");
  });

  it("matches words of snake_case and camelCase names and of parameter names", () => {
    expect(rankTools(tools, "read files")[0]).toBe("readFile");
    expect(rankTools(tools, "subject line")[0]).toBe("send_email");
  });

  it("ranks every tool, those that match nothing last in their order", () => {
    const ranked = rankTools(tools, "weather");
    expect(ranked).toHaveLength(tools.length);
    expect(ranked.slice(1)).toEqual(tools.map((tool) => tool.name).filter((name) => name !== "get_weather"));
  });
});

describe("narrowTools", () => {
  const rules = { maxTools: 2, alwaysOffer: [] };

  it("keeps the request whole when it has no more than K tools besides the always-offered", () => {
    expect(narrowTools(tools.slice(0, 2), [user("weather?")], rules)).toBeNull();
    expect(
      narrowTools(tools.slice(0, 3), [user("weather?")], { maxTools: 2, alwaysOffer: ["Bash", "readFile"] }),
    ).toBeNull();
  });

  it("offers the K best plus the always-offered and pinned tools, in the request's order", () => {
    const narrowed = narrowTools(
      tools,
      [user("Send an email about the weather in Paris")],
      {
        maxTools: 2,
        alwaysOffer: ["Bash"],
      },
      ["readFile"],
    );
    expect(narrowed).toEqual({ offered: ["get_weather", "send_email", "readFile", "Bash"], total: 6 });
  });

  it("keeps the tools called since the latest user turn ahead of the ranking", () => {
    const history = [user("Convert 100 USD to EUR"), called("search_flights", { origin: "SFO" })];
    const narrowed = narrowTools(tools, history, { maxTools: 2, alwaysOffer: [] });
    expect(narrowed?.offered).toEqual(["search_flights", "convert_currency"]);
  });

  it("reads the latest user turn only, and the calls made since", () => {
    const history = [
      user("What's the weather?"),
      called("get_weather", { city: "Paris" }),
      user("Now email it to Bob"),
      called("readFile", { path: "notes.txt" }),
    ];
    expect(narrowingQuery(history)).toEqual({
      text: "Now email it to Bob\nreadFile\nnotes.txt",
      called: ["readFile"],
    });
  });
});

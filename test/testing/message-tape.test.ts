/** MessageTape and ScriptedClient's recording: each call reads back as the list it was sent. */
import { describe, expect, it } from "vitest";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { MessageTape } from "../../src/testing/message-tape.ts";

describe("MessageTape", () => {
  it("reads back each recorded list, also after later lists grew, branched or shrank", () => {
    const tape = new MessageTape<string>();
    const first = tape.record(["s", "u"]);
    const grown = tape.record(["s", "u", "a", "t"]);
    const branched = tape.record(["s", "summary", "t"]);
    const shorter = tape.record(["s"]);
    const again = tape.record(["s", "x"]);
    expect(first()).toEqual(["s", "u"]);
    expect(grown()).toEqual(["s", "u", "a", "t"]);
    expect(branched()).toEqual(["s", "summary", "t"]);
    expect(shorter()).toEqual(["s"]);
    expect(again()).toEqual(["s", "x"]);
  });

  it("gives a copy of its own on each read, and is not changed by edits of the list it was given", () => {
    const tape = new MessageTape<string>();
    const list = ["s", "u"];
    const read = tape.record(list);
    list.push("edited");
    list[0] = "changed";
    const copy = read();
    copy.push("mine");
    expect(read()).toEqual(["s", "u"]);
  });
});

describe("ScriptedClient records", () => {
  it("each call's messages as sent, when the caller edits its list in place between calls", async () => {
    const client = new ScriptedClient([toolCall("a"), toolCall("b"), toolCall("c")]);
    const messages: Record<string, unknown>[] = [{ role: "user", content: "1" }];
    await client.send(messages);
    messages.push({ role: "assistant", content: "2" });
    await client.send(messages);
    messages.splice(0, 2, { role: "user", content: "summary" });
    await client.send(messages);
    expect(client.calls.map((call) => call.messages.map((message) => message.content))).toEqual([
      ["1"],
      ["1", "2"],
      ["summary"],
    ]);
    // A recorded call's messages can be replaced, as a plain property could.
    const [first] = client.calls;
    if (first) first.messages = [];
    expect(client.calls[0]?.messages).toEqual([]);
    client.assertDone();
  });
});

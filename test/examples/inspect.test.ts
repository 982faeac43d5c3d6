import {
  createWebSocketInspector,
  createWebSocketReceiver,
  type StatelyInspectionEvent,
} from "@statelyai/inspect";
import { createInspectorServer } from "@statelyai/inspect/server";
import getPort from "get-port";
import { describe, expect, it } from "vitest";
import { main } from "../../examples/inspect.ts";

/** The state value in a Stately snapshot event (machine snapshots carry one). */
function stateOf(event: StatelyInspectionEvent): unknown {
  return event.type === "@xstate.snapshot" ? (event.snapshot as { value?: unknown }).value : undefined;
}

describe("examples/inspect", () => {
  it("reports every state of the workflow actor, in order", async () => {
    const lines: string[] = [];
    const { result, transitions } = await main({ log: (line) => lines.push(line) });
    expect(result).toBe("Oslo: 18°C and cloudy");
    const workflow = transitions.filter((transition) => transition.machine === "workflow");
    expect(new Set(workflow.map((transition) => transition.state))).toEqual(
      new Set(["compact", "infer", "validate", "enforce", "execute", "review", "done"]),
    );
    // @xstate.snapshot events: the states the actor rests in between its actors' results.
    expect(workflow.filter((transition) => transition.settled).map((transition) => transition.state)).toEqual(
      ["infer", "infer", "execute", "infer", "execute", "done"],
    );
    // The text response is nudged: validate goes back to compact without enforcing.
    expect(
      workflow.filter((transition) => !transition.settled).map((transition) => transition.state),
    ).toEqual([
      "infer",
      "validate",
      "compact",
      "infer",
      "validate",
      "enforce",
      "execute",
      "review",
      "compact",
      "infer",
      "validate",
      "enforce",
      "execute",
      "review",
      "done",
    ]);
    expect(lines).toContain("  workflow: tools.done → done");
  });

  it("streams the run to a Stately inspector bridge over a WebSocket", async () => {
    const port = await getPort();
    const server = createInspectorServer({ port, autoOpen: false });
    const inspector = createWebSocketInspector({ url: `ws://localhost:${port}` });
    try {
      await main({ inspector, log: () => {} });
      // The bridge replays what it received to a new client, as it would to the inspector UI.
      const received: StatelyInspectionEvent[] = [];
      await new Promise<void>((resolve) => {
        createWebSocketReceiver({ server: `ws://localhost:${port}` }).subscribe((event) => {
          received.push(event);
          if (stateOf(event) === "done") resolve();
        });
      });
      const actor = received.find((event) => event.type === "@xstate.actor" && event.name === "workflow");
      expect(actor).toBeDefined();
      const states = received
        .filter((event) => event.type === "@xstate.snapshot" && event.sessionId === actor?.sessionId)
        .map(stateOf);
      expect(states).toEqual(["infer", "infer", "execute", "infer", "execute", "done"]);
    } finally {
      inspector.stop();
      server.stop();
    }
  });
});

/** Failure records and their errors, the log tail, /props parsing, and the port probes. */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { parseServerProps } from "../../src/clients/llama-server/props.ts";
import { ContextDiscoveryError, ForgeError } from "../../src/core/errors.ts";
import {
  errorOfFailure,
  failureOfEarlyExit,
  PortInUseError,
  portInUseMessage,
  ServerCrashedError,
  ServerStartError,
  saysPortInUse,
} from "../../src/server/errors.ts";
import { describePortOccupant, findFreePort, isPortFree } from "../../src/server/ports.ts";
import { LogTail } from "../../src/server/process-log.ts";

describe("errors", () => {
  it("are ForgeErrors named after their class", () => {
    const crash = new ServerCrashedError({ pid: 7, exitCode: 139, signal: null, stderrTail: "segfault" });
    expect(crash).toBeInstanceOf(ForgeError);
    expect(crash.name).toBe("ServerCrashedError");
    expect(crash.message).toBe(
      "llama-server (pid 7) exited with code 139 while it was serving. Call restart() to start it again.\nLast output:\nsegfault",
    );
    const port = errorOfFailure({ kind: "port_in_use", port: 8080, message: "taken" });
    expect(port).toBeInstanceOf(PortInUseError);
    expect(port).toBeInstanceOf(ServerStartError);
    expect(port.name).toBe("PortInUseError");
    expect(errorOfFailure({ kind: "start_timeout", message: "slow" })).toMatchObject({
      name: "ServerStartError",
      kind: "start_timeout",
    });
    expect(errorOfFailure({ kind: "bad_props", message: "no n_ctx" })).toBeInstanceOf(ContextDiscoveryError);
  });

  it("names the port, its holder and the fixes in a port conflict", () => {
    expect(portInUseMessage("127.0.0.1", 8080, "a llama-server running /m.gguf")).toBe(
      "Port 8080 on 127.0.0.1 is already in use by a llama-server running /m.gguf. Stop the process that holds it " +
        "(e.g. `lsof -i :8080` or `fuser -k 8080/tcp`), pass another `port`, or leave `port` out to pick a free one.",
    );
  });

  it("classifies an early exit by llama-server's log", () => {
    const bind =
      "0.00.002.579 E srv         start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080";
    expect(saysPortInUse(bind)).toBe(true);
    expect(saysPortInUse("load_model: failed to load model")).toBe(false);
    expect(
      failureOfEarlyExit({ pid: 1, exitCode: 1, signal: null, stderrTail: bind }, "127.0.0.1", 8080),
    ).toMatchObject({ kind: "port_in_use", port: 8080, exitCode: 1 });
    expect(
      failureOfEarlyExit({ pid: 1, exitCode: null, signal: "SIGSEGV", stderrTail: "..." }, "127.0.0.1", 8080),
    ).toMatchObject({
      kind: "exited_during_start",
      signal: "SIGSEGV",
      message: expect.stringContaining("killed by SIGSEGV"),
    });
  });
});

describe("LogTail", () => {
  it("keeps the last lines across chunk boundaries", () => {
    const tail = new LogTail(2);
    expect(tail.push("one\ntw")).toEqual(["one"]);
    expect(tail.push("o\nthree\r\nfour")).toEqual(["two", "three"]);
    expect(tail.text()).toBe("three\nfour");
  });
});

describe("parseServerProps", () => {
  it("reads n_ctx, slots, model, build and chat template from llama-server's /props", () => {
    const body = JSON.stringify({
      default_generation_settings: { n_ctx: 2048, params: { temperature: 0.8 } },
      total_slots: 4,
      model_path: "/m.gguf",
      build_info: "b1-de3ff81",
      chat_template: "…",
    });
    expect(parseServerProps(body, "http://x/props")).toEqual({
      nCtx: 2048,
      totalSlots: 4,
      modelPath: "/m.gguf",
      buildInfo: "b1-de3ff81",
      chatTemplate: "…",
    });
  });

  it("reads a top-level n_ctx (older llama-server builds)", () => {
    expect(parseServerProps('{"n_ctx":4096,"total_slots":2}', "http://x/props")).toMatchObject({
      nCtx: 4096,
      totalSlots: 2,
    });
  });

  it("throws ContextDiscoveryError for bodies without a usable n_ctx", () => {
    expect(() => parseServerProps("<html>", "http://x/props")).toThrow(ContextDiscoveryError);
    expect(() => parseServerProps('{"total_slots":1}', "http://x/props")).toThrow(
      /did not report a positive n_ctx/,
    );
    expect(() => parseServerProps('{"default_generation_settings":{"n_ctx":0}}', "http://x/props")).toThrow(
      /did not report a positive n_ctx/,
    );
  });
});

describe("port probes", () => {
  it("tell a free port from a taken one, and name a llama-server holding it", async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ model_path: "/models/other.gguf" }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      expect(await isPortFree("127.0.0.1", port)).toBe(false);
      expect(await describePortOccupant(`http://127.0.0.1:${port}`)).toBe(
        "a llama-server running /models/other.gguf",
      );
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    expect(await isPortFree("127.0.0.1", port)).toBe(true);
    const free = await findFreePort("127.0.0.1");
    expect(await isPortFree("127.0.0.1", free)).toBe(true);
    expect(await describePortOccupant(`http://127.0.0.1:${free}`)).toBeNull();
  });
});

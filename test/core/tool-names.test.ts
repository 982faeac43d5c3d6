import { describe, expect, it } from "vitest";
import { normalizeToolName, resolveToolName } from "../../src/core/tool-names.ts";

describe("resolveToolName: near-miss tool names", () => {
  const offered = ["get_weather", "report_weather", "mcp__fs__read_file", "math_hypot"];

  it("keeps an exact name", () => {
    expect(resolveToolName("get_weather", offered)).toEqual({ name: "get_weather", match: "exact" });
  });

  it.each([
    ["Get_Weather", "get_weather"],
    ["get-weather", "get_weather"],
    ["get.weather", "get_weather"],
    ["getWeather", "get_weather"],
    ["math.hypot", "math_hypot"],
  ])("reads %s as %s (case and separators)", (called, name) => {
    expect(resolveToolName(called, offered)).toEqual({ name, match: "normalized" });
  });

  it("adds a namespace prefix the model left out", () => {
    expect(resolveToolName("read_file", offered)).toEqual({
      name: "mcp__fs__read_file",
      match: "missing_prefix",
    });
  });

  it("drops a namespace prefix the model added", () => {
    expect(resolveToolName("functions.get_weather", offered)).toEqual({
      name: "get_weather",
      match: "extra_prefix",
    });
  });

  it("matches nothing when two tools fit", () => {
    expect(resolveToolName("weather", offered)).toBeNull();
    expect(resolveToolName("read", ["fs_read", "db_read"])).toBeNull();
  });

  it("never matches a tail inside a word", () => {
    expect(resolveToolName("eather", ["get_weather"])).toBeNull();
    expect(resolveToolName("hypot", ["math_hypotenuse"])).toBeNull();
  });

  it("matches nothing for an unrelated or empty name", () => {
    expect(resolveToolName("send_email", offered)).toBeNull();
    expect(resolveToolName("...", offered)).toBeNull();
  });

  it("normalizes case, separators and camelCase alike", () => {
    expect(normalizeToolName("Get-Weather.Now")).toBe("get_weather_now");
    expect(normalizeToolName("getWeatherNow")).toBe("get_weather_now");
  });
});

describe("resolveToolName: a namespace, not any word", () => {
  it("does not read a name's last word as the name", () => {
    expect(resolveToolName("weather", ["get_weather", "respond"])).toBeNull();
  });

  it("reads namespaces written with ., __, : or /", () => {
    expect(resolveToolName("fs:read_file", ["read_file"])?.name).toBe("read_file");
    expect(resolveToolName("read_file", ["server/read_file"])?.name).toBe("server/read_file");
  });
});

/**
 * The watch server's small decisions: how deep a JSON text nests (before parsing), the token's
 * checks, and the Host names a bound address answers to.
 */
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import {
  allowedHostNames,
  bearerToken,
  createWatchToken,
  isLoopbackHost,
  tokenCookieName,
  tokenMatches,
} from "../../../src/watch/server/access.ts";
import { jsonDepthExceeds } from "../../../src/watch/server/json-depth.ts";

describe("jsonDepthExceeds", () => {
  it("counts nested objects and arrays, not brackets inside strings or escaped quotes", () => {
    expect(jsonDepthExceeds('{"a":[[1]]}', 3)).toBe(false);
    expect(jsonDepthExceeds('{"a":[[1]]}', 2)).toBe(true);
    expect(jsonDepthExceeds(`{"a":"${"[".repeat(100)}"}`, 1)).toBe(false);
    expect(jsonDepthExceeds(`{"a":"\\"${"{".repeat(100)}"}`, 1)).toBe(false);
    expect(jsonDepthExceeds(`{"a":"\\\\",${'"b":'.repeat(1)}[[[]]]}`, 3)).toBe(true);
    expect(jsonDepthExceeds("[".repeat(20_000), 64)).toBe(true);
    expect(jsonDepthExceeds("[]".repeat(20_000), 1)).toBe(false);
  });
});

describe("the token", () => {
  it("is 32 random base64url characters, compared whole", () => {
    const token = createWatchToken();
    expect(token).toMatch(/^[\w-]{32}$/);
    expect(createWatchToken()).not.toBe(token);
    expect(tokenMatches(token, token)).toBe(true);
    expect(tokenMatches(token, token.slice(0, -1))).toBe(false);
    expect(tokenMatches(token, "")).toBe(false);
    expect(tokenMatches(token, null)).toBe(false);
    expect(bearerToken(`Bearer ${token}`)).toBe(token);
    expect(bearerToken(`bearer  ${token} `)).toBe(token);
    expect(bearerToken(`Basic ${token}`)).toBeNull();
    expect(bearerToken(undefined)).toBeNull();
    expect(tokenCookieName(token)).toMatch(/^forge_watch_[0-9a-f]{12}$/);
    expect(tokenCookieName(token)).not.toBe(tokenCookieName(createWatchToken()));
  });
});

describe("allowedHostNames", () => {
  it("allows the bound host and loopback names with the port; on a wildcard this machine's names too", () => {
    expect(allowedHostNames("127.0.0.1", 4141)).toEqual(["127.0.0.1:4141", "localhost:4141", "[::1]:4141"]);
    expect(allowedHostNames("::1", 80)).toEqual(["[::1]:80", "127.0.0.1:80", "localhost:80"]);
    const wildcard = allowedHostNames("0.0.0.0", 4141, ["watch.example", "other.example:8443"]);
    expect(wildcard).toEqual(
      expect.arrayContaining([
        "0.0.0.0:4141",
        "127.0.0.1:4141",
        `${hostname().toLowerCase()}:4141`,
        "watch.example:4141",
        "other.example:8443",
      ]),
    );
    expect(wildcard).not.toContain("evil.example:4141");
  });

  it("tells loopback hosts from the rest", () => {
    expect(["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"].map(isLoopbackHost)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(["0.0.0.0", "::", "192.168.1.4", "example.com"].map(isLoopbackHost)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});

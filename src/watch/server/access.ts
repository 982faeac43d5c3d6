/**
 * Who may use the watch server: a random token, required to post events (and, when the server
 * listens beyond loopback, to read runs), and the `Host` names it answers to.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { hostname, networkInterfaces } from "node:os";

/** A fresh token: 24 random bytes, base64url. */
export function createWatchToken(): string {
  return randomBytes(24).toString("base64url");
}

/** Whether `given` is the token, compared in constant time. */
export function tokenMatches(token: string, given: string | null | undefined): boolean {
  if (given === null || given === undefined || given === "") return false;
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(token), digest(given));
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1] ?? null;
}

/** The cookie a browser keeps the token in once it opened a page with `?token=`: named per token. */
export function tokenCookieName(token: string): string {
  return `forge_watch_${createHash("sha256").update(token).digest("hex").slice(0, 12)}`;
}

/** Whether a host to listen on is loopback only (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  return bare === "localhost" || bare === "::1" || /^127\.\d+\.\d+\.\d+$/.test(bare);
}

const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]"];

/**
 * The `Host` header values a server listening on `host`:`port` answers: the bound name and the
 * loopback names; for a wildcard (`0.0.0.0`, `::`) also this machine's name and every interface
 * address; plus `extra` names (with or without a port).
 */
export function allowedHostNames(host: string, port: number, extra: readonly string[] = []): string[] {
  const withPort = (name: string) => {
    if (name.startsWith("[")) return /\]:\d+$/.test(name) ? name : `${name}:${port}`;
    if ((name.match(/:/g) ?? []).length > 1) return `[${name}]:${port}`; // a bare IPv6 address
    return /:\d+$/.test(name) ? name : `${name}:${port}`;
  };
  const names = [host, ...LOOPBACK_NAMES];
  if (host === "0.0.0.0" || host === "::") {
    names.push(hostname());
    for (const addresses of Object.values(networkInterfaces())) {
      for (const address of addresses ?? []) names.push(address.address.replace(/%.*$/, ""));
    }
  }
  return [...new Set([...names, ...extra].map((name) => withPort(name).toLowerCase()))];
}

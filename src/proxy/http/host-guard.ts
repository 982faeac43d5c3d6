/**
 * The Host allow-list and the Origin check that close the DNS-rebinding hole: a page on
 * `attacker.example`, whose name the attacker points at 127.0.0.1, reaches the proxy with
 * `Host: attacker.example`, and a page on any site can send a cross-origin `text/plain` POST
 * without a preflight. Only loopback names (and the names given with `--allow-host`) are served;
 * a browser request from another origin is refused when the proxy has no API key.
 */
import type { Context, MiddlewareHandler } from "hono";
import { ProxyErrorKind, ProxyHttpError } from "../errors.ts";

/** Host names the proxy always answers to, with any port. */
export const LOOPBACK_HOSTS: readonly string[] = ["localhost", "127.0.0.1", "[::1]"];

/** Options of `guardHostAndOrigin`. */
export interface HostGuardOptions {
  /**
   * Hosts accepted besides the loopback names: `name` (any port) or `name:port` (that port only);
   * `*` accepts any host and any origin.
   */
  allowedHosts: readonly string[];
  /** Refuse a request whose `Origin` is neither its own nor an allowed host (no API key set). */
  checkOrigin: boolean;
}

/**
 * Whether `host` (a `Host` header: `name` or `name:port`) is a loopback name or matches one of
 * `allowed`. Names compare without case; IPv6 addresses are bracketed, as in a `Host` header.
 */
export function isAllowedHost(host: string, allowed: readonly string[]): boolean {
  const given = splitHost(host);
  if (given === undefined) return false;
  if (LOOPBACK_HOSTS.includes(given.name)) return true;
  return allowed.some((entry) => matchesEntry(given, entry));
}

/**
 * Whether a browser request from `origin` may be served on `host`: its own origin, or an origin
 * whose host was allowed by name (`--allow-host`). `null` origins (sandboxed frames, files) never.
 */
export function isAllowedOrigin(origin: string, host: string, allowed: readonly string[]): boolean {
  if (allowed.includes("*")) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  if (url.host === host.toLowerCase()) return true;
  const given = splitHost(url.host);
  return given !== undefined && allowed.some((entry) => matchesEntry(given, entry));
}

/**
 * Middleware: 421 for a `Host` that is not allowed, 403 for a cross-origin browser request when
 * `checkOrigin` is set. A request without `Host` is not a browser's (browsers always send one):
 * in-process `app.request()` calls, or an HTTP/1.0 client on a socket.
 */
export function guardHostAndOrigin(
  options: HostGuardOptions,
  refuse: (c: Context, error: ProxyHttpError) => Response,
): MiddlewareHandler {
  const anyHost = options.allowedHosts.includes("*");
  return async (c, next) => {
    const sentHost = c.req.header("host");
    const host = sentHost ?? new URL(c.req.url).host;
    if (!anyHost && sentHost !== undefined && !isAllowedHost(host, options.allowedHosts)) {
      return refuse(
        c,
        new ProxyHttpError(
          421,
          ProxyErrorKind.FORBIDDEN,
          `This proxy does not answer to Host "${host.slice(0, 100)}": use a loopback address, or start it with --allow-host <name>`,
        ),
      );
    }
    const origin = c.req.header("origin");
    if (options.checkOrigin && origin !== undefined && !isAllowedOrigin(origin, host, options.allowedHosts)) {
      return refuse(
        c,
        new ProxyHttpError(
          403,
          ProxyErrorKind.FORBIDDEN,
          `Cross-origin request from ${origin.slice(0, 100)} refused: browsers may call this proxy only from its own origin, an --allow-host origin, or with --api-key set`,
        ),
      );
    }
    return next();
  };
}

interface HostParts {
  name: string;
  port: string | undefined;
}

function splitHost(host: string): HostParts | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d+))?$/i.exec(host.trim());
  if (!match?.[1]) return undefined;
  return { name: match[1].toLowerCase(), port: match[2] };
}

function matchesEntry(given: HostParts, entry: string): boolean {
  if (entry === "*") return true;
  const wanted = splitHost(entry);
  if (wanted === undefined || wanted.name !== given.name) return false;
  return wanted.port === undefined || wanted.port === given.port;
}
